"""A distillation run, phase by phase, in one locked folder; each finished phase is reused.

    OUT/config.json          the run's config (a rerun needs --resume and the same config)
    OUT/traces.jsonl         the teacher's kept traces, OUT/traces_meta.json their counts
    OUT/eval/before.json     the student alone on the test split before its fine-tuning
    OUT/student/, student_sft.json   the fine-tuning (embedded: OUT/student/model; verl: OUT/student-verl)
    OUT/eval/after.json      the fine-tuned student, same problems, keys and sampling
    OUT/summary.json         accuracy before and after, the paired gain, the traces' counts, seconds per phase

Bad input is refused before any phase runs (`tandem_app.distill.preflight`). `--resume`
compares the config with the saved one as the trainers do (`tandem_app.train.resume`):
a setting that changes the result is refused in one line; `steps` may not change
(the evaluation after depends on it). The folder is held with `tandem.io.run_lock`.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from tandem.models.threads import apply_threads
from tandem.io import run_lock
from tandem.io.config_files import config_to_dict
from tandem.errors import TandemError
from tandem.io.jsonl import write_json
from tandem.io.run_lock import check_new_run_folder, note
from tandem_app.distill import student_sft, traces
from tandem_app.distill.summary import build_summary

CONFIG = "config.json"
TIMINGS = "timings.json"
SUMMARY = "summary.json"


def run_distill(cfg, resume: bool = False, progress: bool = True, trust_unverified: bool = False) -> dict:
    """Every unfinished phase, holding OUT's lock; returns the summary."""
    cfg.require_paths()
    with run_lock.hold(cfg.out):
        return _run(cfg, Path(cfg.out), resume, progress, trust_unverified)


def start(out: Path, config: dict, resume: bool) -> None:
    """A new run needs an empty folder; `resume` needs the saved config (steps included) to agree."""
    from tandem_app.train.resume import compare_config

    saved = out / CONFIG
    if not resume:
        check_new_run_folder(out)
    elif saved.is_file():
        was = json.loads(saved.read_text())
        compare_config(was, config, str(saved))
        if was.get("steps") != config["steps"]:
            raise TandemError(f"--resume with steps={config['steps']} but {saved} has steps={was.get('steps')}; "
                              "use the run's steps or a new --out")
    else:
        note(f"--resume: {out} holds no {CONFIG}; starting the run there")
    write_json(saved, config)


def _run(cfg, out: Path, resume: bool, progress: bool, trust_unverified: bool) -> dict:
    from tandem_app.distill.preflight import check_inputs

    inputs = check_inputs(cfg)
    start(out, config_to_dict(cfg), resume)
    apply_threads(cfg.threads, [cfg.teacher, cfg.student])
    seconds = _read(out / TIMINGS)

    def phase(name: str, fn):
        t0 = time.time()
        value = fn()
        seconds[name] = seconds.get(name, 0.0) + time.time() - t0
        write_json(out / TIMINGS, seconds)
        return value

    found = traces.read(out)
    header(1, "the teacher's traces", f"one solo trace per training problem, up to {len(inputs.train)}"
           + (f", until {cfg.token_budget} tokens" if cfg.token_budget else ""), found is not None)
    if found is None:
        phase("traces", lambda: traces.write(out, *traces.collect(cfg, inputs, progress=progress)))
        found = traces.read(out)
    rows, meta = found
    counts = traces.TraceCounts(**{k: v for k, v in meta.items() if k in traces.TraceCounts.__dataclass_fields__})
    print(counts.count_line(), flush=True)
    print(counts.long_line(), flush=True)
    empty = traces.nothing_left(cfg, counts)
    if empty:
        raise TandemError(empty)
    evaluated = f"{len(inputs.test)} test problems x {cfg.n_samples} samples"
    header(2, "the student's solo accuracy before", evaluated, (out / "eval" / "before.json").is_file())
    before = _eval_phase(cfg, out, "before", cfg.student, inputs, phase, progress)
    trained = student_sft.done(out)
    header(3, "the student's SFT on the traces", f"{cfg.steps} steps" if cfg.sft_budget == "steps"
           else f"{cfg.sft_tokens} gradient tokens (sft_budget=tokens)", trained is not None)
    model = trained or phase("sft", lambda: student_sft.train(cfg, out, rows, inputs, progress, trust_unverified))
    header(4, "the student's solo accuracy after", evaluated, (out / "eval" / "after.json").is_file())
    after = _eval_phase(cfg, out, "after", model, inputs, phase, progress)
    summary = build_summary(cfg, meta, before, after, seconds, model)
    write_json(out / SUMMARY, summary)
    return summary


def header(k: int, what: str, size: str, done: bool) -> None:
    """One line per phase, so a long run says where it is: `[k/4] what: size` (or `: done, reused`)."""
    print(f"[{k}/4] {what}: " + ("done, reused" if done else size), flush=True)


def _eval_phase(cfg, out: Path, name: str, model: str, inputs, phase, progress: bool = True) -> dict:
    from tandem_app.distill.evaluation import evaluate_solo

    path = out / "eval" / f"{name}.json"
    if not path.is_file():
        result = phase(f"eval_{name}", lambda: evaluate_solo(cfg, model, inputs.test, progress))
        path.parent.mkdir(exist_ok=True)
        write_json(path, result)
    return _read(path)


def _read(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}
