"""The whole paper evaluation in one command: solo, handoff and legibility per checkpoint, then figures and table.

    bash scripts/reproduce_paper_eval.sh --out DIR [--checkpoint LABEL=PATH ...] [--skip-default LABEL] [--junior PATH]
        [--backend vllm|engine] [--max-problems N] [--n N] [--max-new-tokens N]

Checkpoints: `base` (Qwen/Qwen3-4B-Instruct-2507) and `trl-released` (the released TRL
checkpoint, difanjiao/TT-Word-Qwen3-4B-Instruct-2507-DeepScaleR), then every
`--checkpoint LABEL=PATH` in order (a local directory or a hub id `org/name`; giving a
default label points it elsewhere). The junior of every handoff, of legibility and of
drift is `--junior`, else the `base` checkpoint. Each handoff also gives the leak fields and
leak-controlled pass@k (`tandem_eval.core.leak`) and prefix transfer at `--prefix-fractions`
(default 0.3 0.5 0.7, cut from the checkpoint's solo responses; `tandem_eval.analysis.prefix_transfer`),
in the table, the report and `figures/transfer`. Every evaluation runs with the `paper`
preset (`tandem_eval.core.presets`) on `--backend` (default vllm), each step in its own process
(so each vLLM engine gives its memory back):

    DIR/runs/LABEL/solo/      eval_solo outputs          DIR/runs/LABEL/handoff/   eval_step_handoff outputs
    DIR/runs/LABEL/legibility.json                        DIR/figures/passk.{png,svg}, transfer.{png,svg}
    DIR/table.json  DIR/table.md  DIR/report.md           DIR/reproduce.json (the run's settings and step times)

Every checkpoint (and `--junior`) is resolved before any work: a local directory must hold
a `config.json`; a hub id must be in the local Hugging Face cache when the hub is
unreachable (`HF_HUB_OFFLINE=1`, or a metadata request that fails), so a node without
internet learns at once, not after the base's evaluation. `--skip-default trl-released`
leaves a default out (the `base` is the junior and the drift reference: point it
elsewhere with `--checkpoint base=DIR` instead).

Resuming: run the same command again. Finished benchmarks are skipped, a benchmark cut
short continues from its finished samples (`tandem_eval.core.resume`), a finished legibility
file is kept. Refused before any work, each with one line: a label given twice, a path
that is neither a local directory nor a hub id, checkpoints that cannot be had (all named
in one line), outputs in DIR made with another preset or other settings (nothing is
overwritten; choose another --out).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

from tandem.errors import TandemError
from tandem.io.jsonl import write_json
from tandem_eval.paper.checkpoints import check_available, check_model, resolve_checkpoints
from tandem_eval.analysis.prefix_transfer import DEFAULT_FRACTIONS, check_fractions
from tandem_eval.core.presets import DEFAULT_PRESET
from tandem_eval.core.resume import partial_lines, partial_config
from tandem_eval.core import tool

PRESET = "paper"

DESCRIPTION = ("The paper's evaluation end to end: solo, handoff (junior = the base) and legibility of every checkpoint "
               "with the paper preset, then the pass@k figures and Table 2 into DIR/report.md and DIR/table.json.")


def _stored_presets(out: Path) -> set[tuple[str, str]]:
    """(file, preset) of every eval output already in `out`."""
    found = set()
    for path in list(out.glob("runs/*/*/*.summary.json")) + list(out.glob("runs/*/*/summary.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            found.add((str(path), data.get("config", {}).get("preset", data.get("preset", DEFAULT_PRESET))))
        except (OSError, json.JSONDecodeError):
            found.add((str(path), "(unreadable)"))
    for path in out.glob("runs/*/*/*.partial.jsonl"):
        try:
            lines = partial_lines(path)
        except OSError:
            found.add((str(path), "(unreadable)"))
            continue
        if lines:  # a file with no whole header holds nothing finished: the eval starts it over
            config = partial_config(lines)
            found.add((str(path), config.get("preset", DEFAULT_PRESET) if config else "(unreadable)"))
    return found


def check_out_dir(out: Path, settings: dict) -> None:
    """Refuse a DIR holding outputs of another preset or of other settings, before any work."""
    for path, preset in sorted(_stored_presets(out)):
        if preset != PRESET:
            raise TandemError(f"{path} was made with the {preset!r} eval preset, not {PRESET!r}; this command never "
                              "mixes presets or overwrites: choose another --out")
    manifest = out / "reproduce.json"
    if manifest.is_file():
        stored = json.loads(manifest.read_text(encoding="utf-8")).get("settings", {})
        for key, value in settings.items():
            if key == "checkpoints":
                clash = [lbl for lbl, path in value.items() if lbl in stored.get(key, {}) and stored[key][lbl] != path]
                if clash:
                    raise TandemError(f"{out} holds results of checkpoint {clash[0]!r} at "
                                      f"{stored[key][clash[0]]}, not {value[clash[0]]}; choose another --out")
            elif key == "prefix_fractions" and key not in stored:
                continue  # a DIR made before prefix transfer: its outputs are still this run's
            elif stored.get(key) != value:
                raise TandemError(f"{out} was made with {key}={stored.get(key)!r}, this run asks for {value!r}; "
                                  "run with the same flags to resume, or choose another --out")


def _step(cmd: list[str], name: str, timings: dict) -> None:
    print(f"[reproduce] {name}: {' '.join(cmd)}", file=sys.stderr, flush=True)
    start = time.time()
    code = subprocess.run([sys.executable, "-m", *cmd]).returncode
    timings[name] = round(time.time() - start, 1)
    if code != 0:
        raise TandemError(f"{name} failed (exit {code}; its own message is above); fix that and run the same "
                          "command again to resume")


def _legibility_done(path: Path, solo: Path, junior: str) -> bool:
    if not path.is_file():
        return False
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        return False
    newest = max((p.stat().st_mtime for p in solo.glob("*.samples.jsonl")), default=0)
    return (data.get("legibility", {}).get("junior") == junior and data.get("legibility", {}).get("preset") == PRESET
            and path.stat().st_mtime >= newest)


def reproduce(args) -> dict:
    fractions = list(check_fractions(args.prefix_fractions)) if args.prefix_fractions else []
    checkpoints = resolve_checkpoints(args.checkpoint or [], args.skip_default)
    junior = check_model(args.junior, "--junior") if args.junior else dict(checkpoints)["base"]
    check_available(checkpoints, junior)
    for flag in ("max_problems", "n", "max_new_tokens"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise TandemError(f"--{flag.replace('_', '-')} must be >= 1, got {value}")
    out = args.out.expanduser()
    if out.exists() and not out.is_dir():
        raise TandemError(f"--out {out} is a file; pass a directory")
    settings = {"preset": PRESET, "checkpoints": dict(checkpoints), "junior": junior, "backend": args.backend,
                "max_problems": args.max_problems, "n": args.n, "max_new_tokens": args.max_new_tokens,
                "prefix_fractions": fractions}
    check_out_dir(out, settings)
    out.mkdir(parents=True, exist_ok=True)
    manifest = out / "reproduce.json"
    previous = json.loads(manifest.read_text(encoding="utf-8")) if manifest.is_file() else {}
    checkpoints_so_far = {**previous.get("settings", {}).get("checkpoints", {}), **dict(checkpoints)}
    timings: dict = previous.get("timings", {})
    write_json(manifest, {"settings": {**settings, "checkpoints": checkpoints_so_far}, "timings": timings})

    common = ["--preset", PRESET, "--backend", args.backend]
    for flag in ("max_problems", "n", "max_new_tokens"):
        if getattr(args, flag) is not None:
            common += [f"--{flag.replace('_', '-')}", str(getattr(args, flag))]
    if args.data_dir:
        common += ["--data-dir", args.data_dir]
    device = args.device
    runs = out / "runs"
    base_solo = runs / "base" / "solo"
    try:
        for label, path in checkpoints:  # solo first: drift needs the base's solo samples
            _step(["tandem_eval.MATH.eval_solo", "--model", path, "--out-dir", str(runs / label / "solo"), *common,
                   "--device", device], f"{label}/solo", timings)
        for label, path in checkpoints:
            leg = runs / label / "legibility.json"
            if _legibility_done(leg, runs / label / "solo", junior):
                print(f"[reproduce] {label}/legibility: already done ({leg})", file=sys.stderr)
                continue
            _step(["tandem_eval.analysis.legibility", "--senior-samples", str(runs / label / "solo"), "--junior", junior,
                   "--junior-samples", str(base_solo), "--out", str(leg), "--preset", PRESET, "--device", device,
                   "--dtype", "float32" if device == "cpu" else "bfloat16"], f"{label}/legibility", timings)
        prefix = ["--prefix-fractions", *map(str, fractions)] if fractions else []
        for label, path in checkpoints:  # prefix transfer cuts the solo responses written above
            solo = ["--prefix-solo-dir", str(runs / label / "solo")] if fractions else []
            _step(["tandem_eval.MATH.eval_step_handoff", "--senior", path, "--junior", junior, "--out-dir",
                   str(runs / label / "handoff"), *common, "--device", device, *prefix, *solo], f"{label}/handoff",
                  timings)
    finally:
        write_json(manifest, {"settings": {**settings, "checkpoints": checkpoints_so_far}, "timings": timings})
    return write_report(out, [label for label, _ in checkpoints], settings, timings, args.resamples)


def write_report(out: Path, labels: list[str], settings: dict, timings: dict, resamples: int) -> dict:
    from tandem_eval.paper.paper_figures import passk_figure, transfer_figure
    from tandem_eval.paper.paper_results import load_checkpoint
    from tandem_eval.paper.paper_table import build_table, load_reference, to_markdown

    results = [load_checkpoint(label, out / "runs" / label) for label in labels]
    figures = passk_figure(results, out / "figures" / "passk", resamples)
    figures += transfer_figure(results, out / "figures" / "transfer", resamples)
    table = build_table(results, resamples, reference=load_reference())
    write_json(out / "table.json", table)
    md = to_markdown(table)
    (out / "table.md").write_text(md, encoding="utf-8")
    lines = ["# Paper evaluation", "",
             f"Preset `{PRESET}` (`tandem_eval/core/presets.py`; what still differs from the release: "
             "`tandem_eval/README.md`). Backend `{}`; junior `{}`.".format(settings["backend"], settings["junior"]), "",
             "| label | checkpoint |", "|---|---|"] + [f"| {lbl} | {settings['checkpoints'][lbl]} |" for lbl in labels]
    small = {k: settings[k] for k in ("max_problems", "n", "max_new_tokens") if settings[k] is not None}
    if small:
        lines += ["", f"**A reduced run** ({', '.join(f'{k}={v}' for k, v in small.items())}): not comparable with "
                  "the paper's numbers."]
    lines += ["", md, "## Figures", ""] + [f"![{p.stem}]({p.relative_to(out)})" for p in figures if p.suffix == ".png"]
    lines += ["", "## Step wall times (seconds, this machine; the last run of each step)", "",
              "| step | seconds |", "|---|---|"] + [f"| {k} | {v} |" for k, v in timings.items()]
    (out / "report.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(md)
    print(f"wrote {out / 'report.md'} and {out / 'table.json'}")
    return table


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="scripts/reproduce_paper_eval.sh", description=DESCRIPTION)
    p.add_argument("--out", required=True, type=Path, help="output directory (run the same command again to resume)")
    p.add_argument("--checkpoint", action="append", metavar="LABEL=PATH",
                   help="a checkpoint to evaluate besides base and trl-released (a local directory or a hub id); "
                        "repeat; a default label replaces that default's path")
    p.add_argument("--skip-default", action="append", default=[], metavar="LABEL",
                   help="leave a default checkpoint out, e.g. trl-released on a node without internet or the "
                        "released checkpoint in its cache; repeat (base cannot be left out: point it elsewhere)")
    p.add_argument("--junior", default=None, help="the frozen junior of the handoff, legibility and drift (default: "
                   "the base checkpoint)")
    p.add_argument("--backend", choices=("vllm", "engine"), default="vllm",
                   help="vllm (a GPU, or vLLM's CPU build) or engine (the reference engine) (default: %(default)s)")
    p.add_argument("--max-problems", type=int, default=None, help="first N problems of each benchmark (a small run)")
    p.add_argument("--n", type=int, default=None, help="samples per problem (default: the preset's, 8)")
    p.add_argument("--max-new-tokens", type=int, default=None, help="response budget (default: the preset's, 3000)")
    p.add_argument("--data-dir", default=None, help="benchmark JSONL directory (default: $TANDEM_DATA_DIR, else "
                   "../shared/data, else the Hugging Face copies)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda when one is visible, else cpu)")
    p.add_argument("--prefix-fractions", nargs="*", default=[str(f) for f in DEFAULT_FRACTIONS], metavar="F",
                   help="prefix transfer after each handoff: the junior finishes the checkpoint's solo responses cut "
                        "at these fractions, before the answer; each in (0, 1); none given = off (default: "
                        "%(default)s)")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples for the SE bands (default: "
                   "%(default)s)")
    return p


def run(args) -> int:
    if args.device is None:
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    reproduce(args)
    return 0


main = tool.entry(__name__)  # main(argv=None) -> exit status: parse, run, one-line errors


if __name__ == "__main__":
    sys.exit(main())
