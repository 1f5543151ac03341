"""Which teacher distils best into the demo's base? The demo's seniors measured by `tandem-rlvr distill`.

On finished demo seeds (DEMO/seed-S from `tandem-rlvr demo --seed S`, with the partner
variants `score`, `grpo_score`, `grpo_answer_score`, `rlt`, `grpo_transfer` and `transfer` where `--partner`
trained them), each teacher
writes raw solo traces on the toy task's training problems up to one token budget, the
seed's base is fine-tuned on them and evaluated solo before and after on the demo's test
problems (`PROTOCOL`, the same for every teacher; model_spec/RESULTS.md states it). A
teacher missing on a seed is left out of that seed and named. OUT/distill.md and
OUT/distill.json hold, per seed and teacher, the traces (count, tokens, correct and terse
shares), the student's accuracy and gain over the base (paired over problems, ± SE), its
terse share, and the students' paired differences between teachers; then each mean ± SE
over seeds.

    python -m tandem_app.experiments.distill_demo --demo runs/leak --out runs/distill --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tandem.errors import TandemError
from tandem.io.jsonl import write_json
from tandem_app.experiments.trace_copies import copy_shares
from tandem_app.stats import mean_and_se, over_seeds_text, paired_difference, t_interval

# teacher -> (its folder in a demo seed, label); `rlt` is GRPO + partner score with the writer seeing the solution
TEACHERS = {"grpo": ("grpo", "GRPO"), "tandem": ("tandem", "TRL"), "score": ("partner-score", "TRL + partner score"),
            "grpo_score": ("partner-grpo_score", "GRPO + partner score"), "rlt": ("partner-rlt", "RLT setting"),
            "grpo_transfer": ("partner-grpo_transfer", "GRPO + transfer"), "transfer": ("partner-transfer", "TRL + transfer"),
            "grpo_answer_score": ("partner-grpo_answer_score", "GRPO + partner score (target answer)"),
            "rlt_warmup": ("rlt-warmup", "RLT writer before RL")}
# teachers in RLT's setting: RL's writer and its warm-up, distilled into RLT's student form
RLT_TEACHERS = ("rlt", "rlt_warmup")
PAIRS = (("tandem", "grpo"), ("score", "tandem"), ("grpo_score", "grpo"), ("rlt", "tandem"), ("rlt", "grpo_score"),
         ("grpo_transfer", "grpo"), ("transfer", "tandem"), ("grpo_answer_score", "grpo"),
         ("tandem", "grpo_answer_score"), ("rlt", "rlt_warmup"))
# the experiment's distillation settings (model_spec/RESULTS.md, "Teachability by distillation"). Since issue 44
# every student trains on the same gradient tokens (sft_budget=tokens), not the same steps: 120 steps of 32 traces
# gave a terse teacher's student about 30% fewer. 240,000 is about what those 120 steps gave a verbose teacher's.
PROTOCOL = {"token_budget": 48000, "sft_budget": "tokens", "sft_tokens": 240000, "batch_size": 32, "lr": 1e-3,
            "warmup_steps": 10, "min_lr_ratio": 0.1, "n_eval_problems": 200, "n_samples": 4, "threads": 1}
# RLT's teacher (issue 44): its student holds the format tokens (the base with them added, partner_demo's
# rlt-student) and learns RLT's student form, think(explanation) + solution, so the eval gives the student
# room for both (about twice a solution); its traces are sampled at the temperature its RL sampled at.
RLT_EVAL_TOKENS = 256


def rlt_distill() -> dict:
    """The keys RLT's teacher's distillation sets on top of `PROTOCOL` (the eval's sampling otherwise the demo's)."""
    from dataclasses import replace

    from tandem_app.train.eval_config import EvalConfig
    from tandem_eval.core.sampling import record

    return {"writer_sees_solution": True, "temperature": 0.7,
            "eval_sampling": record(replace(EvalConfig().sampling, max_new_tokens=RLT_EVAL_TOKENS))}


NOTATION_SAMPLES = 100  # test problems, one sample each, for the distilled student's notation


def run_teacher(demo: Path, out: Path, seed: int, teacher: str, progress: bool) -> Path | None:
    """The teacher's distillation folder, run (or continued) where its model exists; None where it does not."""
    from tandem.io.strict import build
    from tandem_app.distill.config import DistillConfig
    from tandem_app.distill.run import run_distill

    model = demo / f"seed-{seed}" / TEACHERS[teacher][0] / "model"
    if not model.is_dir():
        return None
    run = out / f"seed-{seed}" / teacher
    if not (run / "summary.json").is_file():
        student = demo / f"seed-{seed}" / ("rlt-student" if teacher in RLT_TEACHERS else "sft/model")
        cfg = build(DistillConfig, {**PROTOCOL, "teacher": str(model), "student": str(student), "out": str(run),
                                    "seed": seed, **(rlt_distill() if teacher in RLT_TEACHERS else {})}, "distill")
        run.mkdir(parents=True, exist_ok=True)
        run_distill(cfg, resume=(run / "config.json").is_file(), progress=progress)
    return run


def notation(run: Path, seed: int) -> dict:
    """Terse shares of the teacher's traces and of the distilled student's solo responses (cached)."""
    from tandem_app.task import terse_share

    path = run / "notation.json"
    if not path.is_file():
        traces = [json.loads(line)["response"] for line in (run / "traces.jsonl").read_text().splitlines() if line]
        summary = json.loads((run / "summary.json").read_text())
        write_json(path, {"teacher_terse": terse_share(traces),
                          "student_terse": terse_share(_student_texts(summary["student_after"], seed))})
    return json.loads(path.read_text())


def _student_texts(model: str, seed: int) -> list[str]:
    from tandem.process.coins import request_key
    from tandem_app.distill.config import DistillConfig
    from tandem_app.distill.evaluation import engine_settings
    from tandem_app.distill.problems import load_split, question_prompt_ids
    from tandem_eval.core.backends import EvalBackend

    cfg = DistillConfig(seed=seed)
    problems = load_split(cfg, "test", NOTATION_SAMPLES)
    backend = EvalBackend(engine_settings(cfg, model), cfg.eval_sampling)
    prompts = question_prompt_ids(backend.tokenizer, problems, cfg.task_data)
    keys = [request_key(f"distill-notation/{seed}/{p.id}", 0) for p in problems]
    return [r.text for r in backend.solo(prompts, keys)]


def seed_rows(out: Path, seed: int, teachers: list[str]) -> dict:
    """{teacher: summary + notation + after-counts (+ the traces' copy shares for RLT's teachers)} for the teachers
    this seed finished."""
    rows = {}
    for t in teachers:
        run = out / f"seed-{seed}" / t
        if (run / "summary.json").is_file():
            after = json.loads((run / "eval" / "after.json").read_text())
            rows[t] = {**json.loads((run / "summary.json").read_text()), **notation(run, seed),
                       "after_counts": after["counts"]}
            if t in RLT_TEACHERS:  # a writer who saw the solution: how much of it its explanations copy
                rows[t]["copies"] = copy_shares(run / "traces.jsonl")
    return rows


def report(out: Path, seeds: list[int], teachers: list[str]) -> dict:
    """distill.json and distill.md: per seed and teacher, then the teacher pairs, each mean ± SE over seeds."""
    per_seed = {s: seed_rows(out, s, teachers) for s in seeds}
    pairs = {}
    for a, b in PAIRS:
        diffs = {s: paired_difference(r[a]["after_counts"], r[a]["n_samples"], r[b]["after_counts"],
                                      r[b]["n_samples"]) for s, r in per_seed.items() if a in r and b in r}
        if diffs:
            values = [d for d, _ in diffs.values()]
            pairs[f"{a} - {b}"] = {"per_seed": diffs, "over_seeds": mean_and_se(values),
                                   "interval": t_interval(values)}
    result = {"seeds": per_seed, "pairs": pairs, "protocol": PROTOCOL}
    write_json(out / "distill.json", result)
    (out / "distill.md").write_text(markdown(result, teachers), encoding="utf-8")
    return result


def markdown(result: dict, teachers: list[str]) -> str:
    lines = ["# Teachability by distillation", "", f"Protocol: {result['protocol']}", "",
             "| seed | teacher | traces | tokens | traces correct | traces terse | student before | student after "
             "| gain ± SE | student terse |", "|---|---|---|---|---|---|---|---|---|---|"]
    for s, rows in result["seeds"].items():
        for t in teachers:
            if t not in rows:
                lines.append(f"| {s} | {TEACHERS[t][1]} | not run | | | | | | | |")
                continue
            r = rows[t]
            lines.append(f"| {s} | {TEACHERS[t][1]} | {r['n_traces']} | {r['trace_tokens']} | "
                         f"{r['traces_correct_fraction']:.3f} | {r['teacher_terse']:.2f} | {r['accuracy_before']:.3f} | "
                         f"{r['accuracy_after']:.3f} | {r['gain']:+.3f} ± {r['gain_se']:.3f} | {r['student_terse']:.2f} |")
    lines += ["", "| students' difference | " + " | ".join(f"seed {s}" for s in result["seeds"]) + " | over seeds |",
              "|---|" + "---|" * (len(result["seeds"]) + 1)]
    for name, p in result["pairs"].items():
        cells = [f"{p['per_seed'][s][0]:+.3f} ± {p['per_seed'][s][1]:.3f}" if s in p["per_seed"] else "—"
                 for s in result["seeds"]]
        k = len(p["per_seed"])
        over = f"{over_seeds_text([d for d, _ in p['per_seed'].values()])} ({k} seeds)" if k > 1 else \
            f"{p['over_seeds'][0]:+.3f} (1 seed: no SE over seeds)"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {over} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--demo", type=Path, required=True, help="the folder holding the demo seeds (DEMO/seed-S)")
    p.add_argument("--out", type=Path, required=True, help="where each distillation and the report go")
    p.add_argument("--seeds", type=int, nargs="+", required=True)
    p.add_argument("--teachers", nargs="+", default=list(TEACHERS), choices=list(TEACHERS))
    p.add_argument("--report-only", action="store_true", help="no new distillation: the report of the finished ones")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    try:
        if not args.report_only:
            for s in args.seeds:
                for t in args.teachers:
                    if run_teacher(args.demo, args.out, s, t, not args.no_progress) is None:
                        print(f"note: seed {s} has no {TEACHERS[t][1]} teacher ({args.demo}/seed-{s}/"
                              f"{TEACHERS[t][0]}/model); left out", file=sys.stderr)
        report(args.out, args.seeds, args.teachers)
    except TandemError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"wrote {args.out / 'distill.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
