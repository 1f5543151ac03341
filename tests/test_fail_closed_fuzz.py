"""Fuzz every command: random `key=value` overrides, flags and inputs never end in a traceback.

For `train`, `sft`, `distill` and `rollout` (its `tandem.KEY=VALUE`), Hypothesis draws one to
three keys of the command's config schema and, for each, a value of the key's declared type:
in range, at its edges, out of range, not finite, beyond float32, or not of that type at
all. Each configuration runs in process on the tiny model, on top of a base that makes any
run a tiny one-step run, to its refusal or its end. It must exit 0, 1 or 2; a non-zero exit
prints exactly one `error:` line; no exception escapes and no traceback is printed.

The commands without a config (build-tiny, boundaries, eval-legibility, eval-plot, eval-table,
eval-figures, demo) draw one to three of their flags the same way, from the flags' own types,
with one of their inputs: good, or damaged one way (gone, empty, not JSON, not UTF-8, of the
wrong shape), and an --out that is new, a folder, a file or under a file. A refusal (exit 2)
must leave the output's folder as it was. The demo's phases are a stand-in (half a minute is
its smallest run): its draws reach each refusal and the start of the work.

The draws are seeded (`derandomize`) and bounded (`EXAMPLES` per command), so the suite runs
the same configurations every time; each command's count of configurations tried is checked.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
import tempfile
import typing
from pathlib import Path

import pytest
import torch

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from tandem_app.commands.cli import main  # noqa: E402

# Per command: most are refusals in milliseconds, the runs among them about a second each.
# TANDEM_FUZZ_EXAMPLES=N draws more (a longer search, outside the main suite's budget).
EXAMPLES = int(os.environ.get("TANDEM_FUZZ_EXAMPLES", "12"))

# Keys left out: paths (a random one only names a missing file, which other tests cover), and the logging
# services (wandb starts a process of its own).
NOT_FUZZED = {"model", "out", "teacher", "student", "data", "test_data", "tensorboard_dir", "wandb", "wandb_project",
              "wandb_mode", "tandem.junior_model"}
# Counts that set the size of the work: drawn from these ranges so a run stays a tiny one.
RANGES = {"steps": (-1, 1), "threads": (-1, 1)}
INT_RANGE = (-2, 3)
FLOATS = ["nan", "inf", "-inf", "1e309", "1e300", "1e39", "1e30", "-1", "0", "1e-8", "0.5", "1", "2", "x"]
OTHER = ["[]", "[1, 2]", "x", "null", ""]

TRAIN_BASE = ["steps=1", "prompts_per_step=2", "group_size=2", "sampling.max_new_tokens=4", "save_every=1",
              "val_every=0", "n_val_problems=1", "n_train_problems=4", "threads=1"]
SFT_BASE = ["steps=1", "batch_size=2", "warmup_steps=0", "n_train_problems=4", "n_val_problems=1", "max_new_tokens=4",
            "log_every=1", "save_every=1", "threads=1"]
DISTILL_BASE = ["n_train_problems=2", "max_new_tokens=4", "steps=1", "batch_size=2", "save_every=1", "warmup_steps=0",
                "n_eval_problems=1", "n_samples=1", "eval_sampling.max_new_tokens=4", "threads=1"]

tried: dict[str, int] = {}  # command -> configurations run
exits: dict[str, dict[int, int]] = {}  # command -> {exit status: how many}


def schema(cls, prefix: str = "") -> list[tuple[str, object, object]]:
    """(dotted key, declared type, default) of every leaf of the config dataclass `cls`."""
    hints, leaves = typing.get_type_hints(cls), []
    for f in dataclasses.fields(cls):
        kind = hints[f.name]
        if dataclasses.is_dataclass(kind):
            leaves += schema(kind, f"{prefix}{f.name}.")
        else:
            default = f.default if f.default is not dataclasses.MISSING else None
            leaves.append((prefix + f.name, kind, default))
    return leaves


def values(key: str, kind, default) -> st.SearchStrategy[str]:
    """Texts for `key`: of its type (in range, at the edges, outside) and of other types."""
    leaf = key.rsplit(".", 1)[-1]
    if kind is bool:
        return st.sampled_from(["true", "false", "1", "maybe", ""])
    if kind is int:
        lo, hi = RANGES.get(leaf, INT_RANGE)
        return st.one_of(st.integers(lo, hi).map(str), st.sampled_from(["1.5", "x", ""]))
    if kind is float:
        return st.one_of(st.sampled_from(FLOATS), st.floats(0, 1).map(repr))
    if kind is str or kind == (str | None):
        return st.sampled_from([str(default or ""), "", "bogus"])
    return st.sampled_from(OTHER)


def overrides(cls, prefix: str = "") -> st.SearchStrategy[list[str]]:
    """One to three `key=value` overrides of `cls`'s keys (under `prefix`), each key once."""
    leaves = [(prefix + k, t, d) for k, t, d in schema(cls) if k not in NOT_FUZZED]
    one = st.sampled_from(leaves).flatmap(lambda leaf: values(*leaf).map(lambda v: f"{leaf[0]}={v}"))
    return st.lists(one, min_size=1, max_size=3, unique_by=lambda o: o.split("=", 1)[0])


def run_once(command: str, argv: list[str], watch: Path | None = None) -> None:
    """Run `argv` in process; its exit and its stderr must be those of a clean refusal or a clean run.

    `watch`: the folder the command writes in; a refusal (exit 2) must leave it as it was.
    """
    tried[command] = tried.get(command, 0) + 1
    before = _listing(watch)
    threads = torch.get_num_threads()
    err, out = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            try:
                code = main(argv)
            except SystemExit as e:  # argparse's own refusals
                code = e.code
    finally:
        torch.set_num_threads(threads)  # a drawn threads=N must not slow the tests that follow
    printed = err.getvalue()
    assert "Traceback" not in printed, (argv, printed)
    assert code in (0, 1, 2), (argv, code, printed)
    exits.setdefault(command, {}).setdefault(code, 0)
    exits[command][code] += 1
    if code:
        errors = [line for line in printed.splitlines() if "error:" in line]
        assert len(errors) == 1, (argv, printed)
    if code == 2:
        assert _listing(watch) == before, (argv, printed, "a refusal wrote", _listing(watch))


def _listing(folder: Path | None) -> list[str] | None:
    """The paths under `folder` (None where it does not exist)."""
    if folder is None or not folder.is_dir():
        return None if folder is None or not folder.exists() else ["<a file>"]
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


FUZZ = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                suppress_health_check=list(HealthCheck))


def _train_config():
    from tandem_app.train.train_config import TrainConfig

    return TrainConfig


def _sft_config():
    from tandem_app.train.sft import SFTConfig

    return SFTConfig


def _distill_config():
    from tandem_app.distill.config import DistillConfig

    return DistillConfig


def _tandem_config():
    from tandem.process.config import TandemConfig

    return TandemConfig


@pytest.fixture(scope="module")
def prompts(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("prompts") / "prompts.jsonl"
    path.write_text('{"id": "p0", "prompt": "What is 2 + 3?"}\n', encoding="utf-8")
    return path


def test_train_overrides_never_end_in_a_traceback(tiny_dir):
    @FUZZ
    @given(overrides(_train_config()))
    def check(drawn):
        with tempfile.TemporaryDirectory() as tmp:
            run_once("train", ["train", *TRAIN_BASE, *drawn, "--model", str(tiny_dir), "--out", f"{tmp}/run",
                               "--no-progress"])

    check()
    print(f"train: {tried['train']} configurations, exits {exits['train']}")
    assert tried["train"] >= EXAMPLES


def test_sft_overrides_never_end_in_a_traceback(tiny_dir):
    @FUZZ
    @given(overrides(_sft_config()))
    def check(drawn):
        with tempfile.TemporaryDirectory() as tmp:
            run_once("sft", ["sft", *SFT_BASE, *drawn, "--model", str(tiny_dir), "--out", f"{tmp}/run",
                             "--no-progress"])

    check()
    print(f"sft: {tried['sft']} configurations, exits {exits['sft']}")
    assert tried["sft"] >= EXAMPLES


def test_distill_overrides_never_end_in_a_traceback(tiny_dir):
    @FUZZ
    @given(overrides(_distill_config()))
    def check(drawn):
        with tempfile.TemporaryDirectory() as tmp:
            run_once("distill", ["distill", *DISTILL_BASE, *drawn, "--teacher", str(tiny_dir), "--student",
                                 str(tiny_dir), "--out", f"{tmp}/run", "--no-progress"])

    check()
    print(f"distill: {tried['distill']} configurations, exits {exits['distill']}")
    assert tried["distill"] >= EXAMPLES


def test_rollout_overrides_never_end_in_a_traceback(tiny_dir, prompts):
    @FUZZ
    @given(overrides(_tandem_config(), "tandem."))
    def check(drawn):
        with tempfile.TemporaryDirectory() as tmp:
            run_once("rollout", ["rollout", *drawn, "--senior", str(tiny_dir), "--junior", str(tiny_dir),
                                 "--prompts", str(prompts), "--max-new-tokens", "4", "--out", f"{tmp}/out.jsonl"])

    check()
    print(f"rollout: {tried['rollout']} configurations, exits {exits['rollout']}")
    assert tried["rollout"] >= EXAMPLES


# The eval tools take flags, not key=value: their schema is the flags' own types (argparse's `type`).
EVAL_FLAGS = {"--n": int, "--max-problems": int, "--temperature": float, "--top-p": float, "--top-k": int,
              "--max-new-tokens": int, "--seed": int, "--errata": str, "--fields": str, "--device": str,
              "--dtype": str, "--batch-size": int, "--instruction": str, "--save-every": int, "--preset": str}
EVAL_TEXTS = {"--errata": ["fixed", "source", "bogus"], "--preset": ["ours", "paper", "bogus"],
              "--fields": ["problem=problem", "bogus", "id=x"], "--device": ["cpu", "gpu", ""],
              "--dtype": ["auto", "float32", "bfloat16", "int8"], "--instruction": ["", "Think."]}


def flags(kinds: dict[str, type], texts: dict[str, list[str]]) -> st.SearchStrategy[list[str]]:
    """One to three of the flags `kinds` names, each with a value of its type or of another: `--flag=VALUE`,
    a list flag's words after it, a switch (`bool`) alone. A flag in `texts` draws its value from there."""
    def flag(name: str) -> st.SearchStrategy[list[str]]:
        kind = kinds[name]
        if kind is bool:
            return st.just([name])
        drawn = st.sampled_from(texts[name]) if name in texts else values(name.lstrip("-"), kind, None)
        return drawn.map(lambda v: [name, *v.split()] if kind is list else [f"{name}={v}"])

    names = st.lists(st.sampled_from(sorted(kinds)), min_size=1, max_size=3, unique=True)
    return names.flatmap(lambda ns: st.tuples(*(flag(n) for n in ns)).map(lambda fs: [w for f in fs for w in f]))


def eval_flags() -> st.SearchStrategy[list[str]]:
    """One to three flags of the eval tools, each with a value of its type or of another."""
    return flags(EVAL_FLAGS, EVAL_TEXTS)


@pytest.fixture(scope="module")
def problems(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("bench") / "toy.jsonl"
    path.write_text('{"id": "a", "problem": "What is 2 + 3?", "answer": "5"}\n'
                    '{"id": "b", "problem": "What is 4 + 4?", "answer": "8"}\n', encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["eval-solo", "eval-handoff"])
def test_eval_flags_never_end_in_a_traceback(command, tiny_dir, problems):
    models = ["--model", str(tiny_dir)] if command == "eval-solo" else ["--senior", str(tiny_dir), "--junior",
                                                                         str(tiny_dir)]

    @FUZZ
    @given(eval_flags())
    def check(drawn):
        with tempfile.TemporaryDirectory() as tmp:
            run_once(command, [command, *models, "--benchmarks", str(problems), "--n", "1", "--max-new-tokens", "4",
                               *drawn, "--out-dir", f"{tmp}/eval"])

    check()
    print(f"{command}: {tried[command]} configurations, exits {exits[command]}")
    assert tried[command] >= EXAMPLES


# --- the commands without a config: their flags' own types, and the files they read -------------------
#
# build-tiny, boundaries, the eval readers and demo take flags and files. Each draw is one to three
# of the command's flags (as above) and one of its inputs: a good one, or a copy damaged in one way
# (gone, empty, not JSON, not UTF-8, of the wrong shape), or an output path that cannot be written.


def pick(options: dict[str, list[str]], good: tuple[str, ...] = ()) -> st.SearchStrategy[list[str]]:
    """One of `options` (argv words by name; drawn by name, so the seeded draws stay the same); half the draws
    one of the `good` names, so that runs reach their end about as often as a refusal."""
    names = st.sampled_from(sorted(options))
    return (st.one_of(st.sampled_from(good), names) if good else names).map(options.__getitem__)


def out_kind(*others: str) -> st.SearchStrategy[str]:
    """A kind of --out (`outs`): half the draws a new path, the others one of `others`."""
    return st.one_of(st.just("new"), st.sampled_from(others))


@pytest.fixture(scope="module")
def places(tmp_path_factory) -> dict[str, Path]:
    """Paths a user may pass where a folder or file is wanted: one that is not there, an empty folder, a file."""
    root = tmp_path_factory.mktemp("places")
    (root / "empty").mkdir()
    (root / "a-file").write_text("not a folder\n", encoding="utf-8")
    return {"missing": root / "missing", "empty": root / "empty", "file": root / "a-file"}


def outs(tmp: Path, name: str) -> dict[str, list[str]]:
    """--out, by kind: a new path, an empty folder, a file, a path under a file; all in `tmp`/out, which the
    test watches."""
    out = tmp / "out"
    (out / "empty").mkdir(parents=True)
    (out / "a-file").write_text("not a folder\n", encoding="utf-8")
    return {"new": ["--out", str(out / "new" / name)], "empty": ["--out", str(out / "empty")],
            "file": ["--out", str(out / "a-file")], "under-a-file": ["--out", str(out / "a-file" / name)]}


def test_build_tiny_flags_never_end_in_a_traceback():
    @FUZZ
    @given(flags({"--seed": int}, {}), out_kind("empty", "file", "under-a-file"))
    def check(drawn, out):
        with tempfile.TemporaryDirectory() as tmp:
            run_once("build-tiny", ["build-tiny", *drawn, *outs(Path(tmp), "tiny")[out]], Path(tmp) / "out")

    check()
    print(f"build-tiny: {tried['build-tiny']} configurations, exits {exits['build-tiny']}")
    assert tried["build-tiny"] >= min(EXAMPLES, 36)  # 9 texts of --seed x 4 kinds of --out: all of them, at most


def test_boundaries_flags_never_end_in_a_traceback(tiny_dir, places):
    tokenizers = {"tiny": [str(tiny_dir)], **{k: [str(p)] for k, p in places.items()}}

    @FUZZ
    @given(pick(tokenizers, ("tiny",)), st.sampled_from(["word", "sentence", "step", "bogus", ""]),
           out_kind("none", "empty", "file", "under-a-file"))
    def check(tokenizer, strategy, out):
        with tempfile.TemporaryDirectory() as tmp:
            where = [] if out == "none" else outs(Path(tmp), "ids.json")[out]
            run_once("boundaries", ["boundaries", "--tokenizer", *tokenizer, f"--strategy={strategy}", *where],
                     Path(tmp) / "out")

    check()
    print(f"boundaries: {tried['boundaries']} configurations, exits {exits['boundaries']}")
    assert tried["boundaries"] >= EXAMPLES


# A checkpoint's eval results (solo/, handoff/, legibility.json), and copies of it damaged one way each:
# file -> its new bytes (None: the file deleted).
DAMAGE = {
    "summary-not-json": ("solo/summary.json", b'{"ks": [1, 2'),
    "summary-not-utf8": ("solo/summary.json", b'{"ks": [1, 2], "benchmarks": {"caf\xe9": {}}}'),
    "summary-a-list": ("solo/summary.json", b"[1, 2]"),
    "summary-no-ks": ("solo/summary.json", b'{"benchmarks": {"toy": {}}}'),
    "benchmark-gone": ("solo/toy.summary.json", None),
    "benchmark-no-rows": ("solo/toy.summary.json", b'{"benchmark": "toy"}'),
    "legibility-a-list": ("legibility.json", b"[]"),
    "legibility-not-utf8": ("legibility.json", b'{"drift": "\xff"}'),
    "samples-not-json": ("solo/toy.samples.jsonl", b'{"problem_id": "a"\n'),
    "samples-empty": ("solo/toy.samples.jsonl", b""),
    "samples-ids-beyond-vocab": ("solo/toy.samples.jsonl",
                                 b'{"problem_id": "a", "benchmark": "toy", "sample": 0, "prompt_ids": [1], '
                                 b'"response_ids": [99999]}\n'),
}


@pytest.fixture(scope="module")
def results(tiny_dir, problems, tmp_path_factory) -> dict[str, Path]:
    """"good": a checkpoint's results from the tiny model (eval-solo, eval-handoff, eval-legibility; n=2, 4
    tokens); each name of DAMAGE: a copy with that damage."""
    import shutil

    root = tmp_path_factory.mktemp("results")
    good, common = root / "good", ["--benchmarks", str(problems), "--n", "2", "--max-new-tokens", "4"]
    threads = torch.get_num_threads()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["eval-solo", "--model", str(tiny_dir), *common, "--out-dir", str(good / "solo")]) == 0
        assert main(["eval-handoff", "--senior", str(tiny_dir), "--junior", str(tiny_dir), *common,
                     "--out-dir", str(good / "handoff")]) == 0
        assert main(["eval-legibility", "--senior-samples", str(good / "solo"), "--junior", str(tiny_dir),
                     "--junior-samples", str(good / "solo"), "--out", str(good / "legibility.json")]) == 0
    torch.set_num_threads(threads)
    copies = {"good": good}
    for name, (file, data) in DAMAGE.items():
        copy = copies[name] = shutil.copytree(good, root / name)
        if data is None:
            (copy / file).unlink()
        else:
            (copy / file).write_bytes(data)
    return copies


LEGIBILITY_FLAGS = {"--max-per-problem": int, "--top-k": int, "--batch-size": int, "--device": str, "--dtype": str,
                    "--preset": str}


def test_eval_legibility_flags_never_end_in_a_traceback(tiny_dir, results, places):
    seniors = {name: ["--senior-samples", str(path / "solo")] for name, path in results.items()}
    seniors |= {"one-file": ["--senior-samples", str(results["good"] / "solo" / "toy.samples.jsonl")],
                **{k: ["--senior-samples", str(p)] for k, p in places.items()}}
    juniors = {"tiny": ["--junior", str(tiny_dir)], "none": [], "missing": ["--junior", str(places["missing"])],
               "samples": ["--junior-samples", str(results["good"] / "solo")],
               "both": ["--junior", str(tiny_dir), "--junior-samples", str(results["good"] / "solo")],
               "samples-damaged": ["--junior-samples", str(results["samples-not-json"] / "solo")],
               "samples-and-tokenizer": ["--junior-samples", str(results["good"] / "solo"), "--tokenizer",
                                         str(places["empty"])]}

    @FUZZ
    @given(flags(LEGIBILITY_FLAGS, EVAL_TEXTS), pick(seniors, ("good", "one-file")), pick(juniors, ("tiny", "both")),
           out_kind("empty", "under-a-file"))
    def check(drawn, senior, junior, out):
        with tempfile.TemporaryDirectory() as tmp:
            run_once("eval-legibility", ["eval-legibility", *senior, *junior, *drawn,
                                         *outs(Path(tmp), "legibility.json")[out]], Path(tmp) / "out")

    check()
    print(f"eval-legibility: {tried['eval-legibility']} configurations, exits {exits['eval-legibility']}")
    assert tried["eval-legibility"] >= EXAMPLES


def _specs(results: dict[str, Path], places: dict[str, Path], phase: str = "") -> dict[str, str]:
    """LABEL=PATH texts for --checkpoint (`phase` '': a checkpoint) or --run (`phase` 'solo': an eval's output)."""
    at = lambda path: path / phase if phase else path  # noqa: E731
    specs = {name: f"{name}={at(path)}" for name, path in results.items()}
    return specs | {"again": f"again={at(results['good'])}", "unlabelled": str(at(results["good"])), "no-path": "good=",
                    **{k: f"{k}={p}" for k, p in places.items()}}


def _repeated(flag: str, specs: dict[str, str]) -> st.SearchStrategy[list[str]]:
    """`flag SPEC` once or twice (the same label twice among the draws), half of them the good results."""
    one = st.one_of(st.sampled_from(["good", "again"]), st.sampled_from(sorted(specs)))
    return st.lists(one, min_size=1, max_size=2).map(lambda names: [w for n in names for w in (flag, specs[n])])


@pytest.mark.parametrize("command", ["eval-table", "eval-figures"])
def test_eval_table_and_figures_flags_never_end_in_a_traceback(command, results, places):
    kinds = {"--resamples": int, "--seed": int, **({"--no-reference": bool} if command == "eval-table" else {})}

    @FUZZ
    @given(flags(kinds, {}), _repeated("--checkpoint", _specs(results, places)),
           out_kind("empty", "under-a-file"))
    def check(drawn, checkpoints, out):
        with tempfile.TemporaryDirectory() as tmp:
            run_once(command, [command, *checkpoints, *drawn, *outs(Path(tmp), "table")[out]],
                     Path(tmp) / "out")

    check()
    print(f"{command}: {tried[command]} configurations, exits {exits[command]}")
    assert tried[command] >= EXAMPLES


def test_eval_plot_flags_never_end_in_a_traceback(results, places):
    texts = {"--benchmarks": ["toy", "bogus", ",", "toy,bogus", ""], "--title": ["", "pass@k", "50% {x}"]}

    @FUZZ
    @given(flags({"--benchmarks": str, "--title": str}, texts), _repeated("--run", _specs(results, places, "solo")),
           out_kind("empty", "under-a-file"))
    def check(drawn, runs, out):
        with tempfile.TemporaryDirectory() as tmp:
            run_once("eval-plot", ["eval-plot", *runs, *drawn, *outs(Path(tmp), "plot.png")[out]],
                     Path(tmp) / "out")

    check()
    print(f"eval-plot: {tried['eval-plot']} configurations, exits {exits['eval-plot']}")
    assert tried["eval-plot"] >= EXAMPLES


DEMO_FLAGS = {"--quick": bool, "--seed": int, "--seeds": list, "--partner": list, "--no-progress": bool}
DEMO_TEXTS = {"--seeds": ["0", "0 1", "1 1", "-1", "x", "0 x"],
              "--partner": ["weaker", "sync ema", "bogus", "weaker weaker", "rlt bogus"]}


class DemoStarted(Exception):
    """The stand-in for the demo's phases: raised where its first phase would begin."""


def test_demo_flags_never_end_in_a_traceback(monkeypatch):
    """The demo's smallest run takes half a minute, so its phases are a stand-in that stops it (exit 1, one
    line) once every check has passed: the draws reach each refusal and the start of the work, not the work."""
    from tandem.errors import RunFailed

    started = []

    def first_phase(cfg, out, progress):
        started.append(out)
        raise RunFailed(f"the demo's phases start here ({out})")

    monkeypatch.setattr("tandem_app.experiments.demo._run_demo", first_phase)

    @FUZZ
    @given(flags(DEMO_FLAGS, DEMO_TEXTS), out_kind("file", "under-a-file"))
    def check(drawn, out):
        with tempfile.TemporaryDirectory() as tmp:
            run_once("demo", ["demo", *drawn, *outs(Path(tmp), "demo")[out]], Path(tmp) / "out")

    check()
    print(f"demo: {tried['demo']} configurations, exits {exits['demo']}, {len(started)} reached the first phase")
    assert tried["demo"] >= EXAMPLES and started
