"""Fuzz every config-driven command: random `key=value` overrides never end in a traceback.

For `train`, `sft`, `distill` and `rollout` (its `tandem.KEY=VALUE`), Hypothesis draws one to
three keys of the command's config schema and, for each, a value of the key's declared type:
in range, at its edges, out of range, not finite, beyond float32, or not of that type at
all. Each configuration runs in process on the tiny model, on top of a base that makes any
run a tiny one-step run, to its refusal or its end. It must exit 0, 1 or 2; a non-zero exit
prints exactly one `error:` line; no exception escapes and no traceback is printed.

The draws are seeded (`derandomize`) and bounded (`EXAMPLES` per command), so the suite runs
the same configurations every time; each command's `configurations_tried` is checked.
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


def run_once(command: str, argv: list[str]) -> None:
    """Run `argv` in process; its exit and its stderr must be those of a clean refusal or a clean run."""
    tried[command] = tried.get(command, 0) + 1
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
    from tandem.config import TandemConfig

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


def eval_flags() -> st.SearchStrategy[list[str]]:
    """One to three flags of the eval tools, each with a value of its type or of another."""
    def flag(name: str) -> st.SearchStrategy[list[str]]:
        kind = EVAL_FLAGS[name]
        texts = st.sampled_from(EVAL_TEXTS[name]) if kind is str else values(name.lstrip("-"), kind, None)
        return texts.map(lambda v: [f"{name}={v}"])

    names = st.lists(st.sampled_from(sorted(EVAL_FLAGS)), min_size=1, max_size=3, unique=True)
    return names.flatmap(lambda ns: st.tuples(*(flag(n) for n in ns)).map(lambda fs: [w for f in fs for w in f]))


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
