"""Write a result record (`model_spec/results/NAME.json`) from finished run folders.

    python scripts/record_results.py quick-demo --runs runs/quick-seed-0 runs/quick-seed-1 runs/quick-seed-2 \
        --out model_spec/results/quick_demo.json

Each experiment kind is one entry of `KINDS`: a function of the run folders that returns the
numbers, the command that made each run and the torch threads the runs used. The record is
stamped by `tandem.io.result_record.stamp` (the commit of this checkout, this machine), so run
this on the machine, at the commit, that made the runs. `scripts/render_results.py` renders the
documents' blocks from the record. To add a kind: write `def my_kind(runs) -> Recorded` and
register it with `@kind("my-kind")`; then add a renderer for it in `scripts/render_results.py`.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shlex
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from tandem.errors import TandemError, run_reporting_errors
from tandem.io.metric_log import (ACCURACY, LOSS, PARTNER_SCORE, RESPONSE_LENGTH, TERSE_FRACTION, TIME_PARTNER,
                                  TIME_STEP, TRANSFER_REWARD_MEAN, TRANSFER_UNDETERMINED_FRACTION, VAL_ACCURACY,
                                  ZERO_VARIANCE_GROUPS, read_metrics)
from tandem.io.result_record import read_record, stamp, write_record
from tandem.rewards.partner_config import TERMS

REPO = Path(__file__).resolve().parents[1]


@dataclass
class Recorded:
    """What a kind reads from its run folders."""

    numbers: dict
    runs: list[str] = field(default_factory=list)  # the command that made each run folder
    threads: int | None = None  # torch CPU threads the runs used (None: torch's default)
    machine: dict | None = None  # the machine that made the runs, where it is not this one (a lent GPU machine)


KINDS: dict[str, Callable[[list[Path]], Recorded]] = {}


def kind(name: str):
    """Register a function (run folders -> Recorded) as experiment kind `name`; a second one under a name is refused."""
    def register(fn):
        if name in KINDS:
            raise ValueError(f"result kind {name!r} is registered twice ({KINDS[name].__name__}, {fn.__name__})")
        KINDS[name] = fn
        return fn
    return register


def _json(run: Path, name: str) -> dict:
    path = run / name
    if not path.is_file():
        raise TandemError(f"{path}: missing; is {run} a finished run folder?")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise TandemError(f"{path}: not JSON ({e.msg}, line {e.lineno}); rerun the step that writes it") from None


@kind("quick-demo")
def quick_demo(runs: list[Path]) -> Recorded:
    """`tandem-rlvr demo --quick --seed S` over several seeds: every number of the seed table, per seed."""
    from tandem.models.threads import choose_threads
    from tandem_app.experiments.seeds import seed_summary

    seeds, presets, commands, threads = {}, set(), [], set()
    for run in runs:
        cfg = _json(run, "demo_config.json")
        res = _json(run, "eval/results.json")
        if not cfg.get("quick"):
            raise TandemError(f"{run}: not a `demo --quick` run (its demo_config.json has quick false)")
        seed = str(cfg["seed"])
        if seed in seeds:
            raise TandemError(f"{run}: seed {seed} is recorded twice; pass one run folder per seed")
        seeds[seed] = seed_summary(res)
        preset = {
            "layers": cfg["model"]["num_hidden_layers"], "hidden_size": cfg["model"]["hidden_size"],
            "task_steps": [cfg["task"]["min_steps"], cfg["task"]["max_steps"]],
            "sft_steps": cfg["sft"]["steps"], "rl_steps": cfg["train"]["steps"],
            "n_problems": res["_meta"]["n_problems"], "n_samples": res["_meta"]["eval"]["n_samples"],
        }
        presets.add(json.dumps(preset, sort_keys=True))
        flags = f" --threads {cfg['threads']}" if cfg["threads"] else ""
        commands.append(f"tandem-rlvr demo --quick --seed {seed} --out {run}{flags}")
        threads.add(choose_threads(cfg["threads"], [run / "sft" / "model"]))
    if len(presets) != 1:
        raise TandemError(f"the runs {', '.join(map(str, runs))} were made with different settings; record them apart")
    if len(threads) != 1:
        raise TandemError(f"the runs used different torch thread counts ({sorted(map(str, threads))}); record them apart")
    return Recorded(numbers={"preset": json.loads(presets.pop()), "seeds": seeds}, runs=commands, threads=threads.pop())


def _seed_config(run: Path) -> dict:
    cfg = _json(run, "demo_config.json")
    if not isinstance(cfg.get("seed"), int):
        raise TandemError(f"{run}/demo_config.json: no integer `seed`; record a folder written by `tandem-rlvr demo`")
    if cfg.get("quick"):
        raise TandemError(f"{run}: a `demo --quick` run; this kind records the default demo")
    return cfg


def _demo_command(cfg: dict, run: Path, partners=()) -> str:
    """The `tandem-rlvr demo` command that made a seed folder: its seed, its partner arms, its threads."""
    partner = f" --partner {' '.join(partners)}" if partners else ""
    threads = f" --threads {cfg['threads']}" if cfg["threads"] else ""
    return f"tandem-rlvr demo --seeds {cfg['seed']}{partner} --out {run.parent}{threads}"


@kind("demo")
def demo(runs: list[Path]) -> Recorded:
    """`tandem-rlvr demo --seed S` (the default budget) over seeds: the seed table's numbers and verdicts."""
    from tandem.models.threads import choose_threads
    from tandem_app.experiments.seeds import seed_summary

    seeds, commands, threads = {}, [], set()
    for run in runs:
        cfg = _seed_config(run)
        seeds[str(cfg["seed"])] = seed_summary(_json(run, "eval/results.json"))
        commands.append(_demo_command(cfg, run))
        threads.add(choose_threads(cfg["threads"], [run / "sft" / "model"]))
    return Recorded(numbers={"seeds": seeds}, runs=commands, threads=_one(threads, runs))


PARTNER_FIELDS = ("solo_acc", "handoff_acc", "weak_handoff_acc", "drift_js_vs_base", "junior_ce", "solo_terse_share")
PAIRED_MODES = (("solo", "solo"), ("handoff", "handoff"), ("weak_handoff", "weak_handoff"))
PAIRED_AGAINST = ("grpo", "tandem")  # each senior minus GRPO and minus the paper's TRL, where both ran


@kind("partner")
def partner(runs: list[Path]) -> Recorded:
    """`tandem-rlvr demo --seeds S --partner ...` over seeds (each run folder OUT/seed-S): every evaluated
    senior's numbers, and each senior minus GRPO and minus TRL (where they ran), solo and in handoff to the base
    and to the weaker junior, paired over the seed's test problems (mean, SE)."""
    from tandem.models.threads import choose_threads
    from tandem_app.stats import paired_difference

    seeds, commands, threads = {}, [], set()
    for run in runs:
        cfg = _seed_config(run)
        evals = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in sorted((run / "partner-eval").glob("*.json"))
                 if p.stem != "results"}
        if "grpo" not in evals:
            raise TandemError(f"{run}: no partner-eval/grpo.json; run `tandem-rlvr demo --partner ...` to the end")
        refs = {against: evals[against] for against in PAIRED_AGAINST if against in evals}
        seeds[str(cfg["seed"])] = {name: {
            **{f: r[f] for f in PARTNER_FIELDS},
            **{f"{mode}_minus_{against}": list(paired_difference(r[f"{key}_counts"], r[f"{key}_n"],
                                                                 ref[f"{key}_counts"], ref[f"{key}_n"]))
               for against, ref in refs.items() for mode, key in PAIRED_MODES},
        } for name, r in evals.items()}
        commands.append(_demo_command(cfg, run, [n for n in evals if n not in ("grpo", "tandem")]))
        threads.add(choose_threads(cfg["threads"], [run / "sft" / "model"]))
    return Recorded(numbers={"seeds": seeds}, runs=commands, threads=_one(threads, runs))


LEAK_RATES = {"handoff visible": ("handoff_rates", "visible_rate"), "solo visible": ("solo_rates", "visible_rate"),
              "handoff budget hit": ("handoff_rates", "hit_budget_rate"), "solo budget hit": ("solo_rates", "hit_budget_rate"),
              "junior wrote the answer": ("handoff_rates", "junior_final_rate"),
              "gold undetermined": ("handoff_rates", "undetermined_rate")}


def _no_nan(values) -> list:
    """A measure over no problem is None in the record (JSON has no NaN)."""
    return [None if isinstance(v, float) and math.isnan(v) else v for v in values]


def _one_folder(runs: list[Path], name: str) -> None:
    """An experiment over seeds whose one --out folder holds every seed's report is recorded from that folder."""
    if len(runs) != 1:
        raise TandemError(f"{name} records one {name}_demo --out folder (it holds every seed); give one --runs folder")


@kind("leak")
def leak(runs: list[Path]) -> Recorded:
    """`python -m tandem_app.experiments.leak_demo --out OUT --seeds ...` (one OUT folder): per seed and arm, each
    measure's pass@1 and the problems it scored, the leak and budget rates, GRPO's terse share (the demo's eval),
    and each of the experiment's pairs per seed, paired over the problems both arms score (mean, SE, problems)."""
    from tandem_app.experiments.leak_demo import PAIRS, accuracy, paired, scores
    from tandem_app.experiments.seeds import seed_summary

    _one_folder(runs, "leak")
    run = runs[0]
    got = _json(run, "leak.json")
    seeds, pairs = {}, {}
    for s, arms in got["seeds"].items():
        demo = seed_summary(_json(run / f"seed-{s}", "eval/results.json"))["numbers"]
        seeds[s] = {"grpo_terse_share": demo["terse steps, GRPO"], "arms": {arm: {
            "measures": {m: _no_nan(accuracy(c)) for m, c in scores(r).items()},
            "rates": {k: r[part][key] for k, (part, key) in LEAK_RATES.items()},
        } for arm, r in arms.items()}}
        for first, second in [p for p in PAIRS if p[0] in arms and p[1] in arms]:
            a, b = scores(arms[first]), scores(arms[second])
            for m in a:
                pairs.setdefault(f"{first}-{second}", {}).setdefault(m, {})[s] = _no_nan(paired(a[m], b[m]))
    command = f"python -m tandem_app.experiments.leak_demo --out {run} --seeds {' '.join(seeds)} --threads {got['threads']}"
    return Recorded(numbers={"seeds": seeds, "paired": pairs}, runs=[command], threads=got["threads"])


@kind("majority")
def majority(runs: list[Path]) -> Recorded:
    """`python -m tandem_app.experiments.majority_demo --out OUT --seeds ... --k K` (one OUT folder): per seed and
    senior, pass@1 over the K solo samples and Maj@K."""
    _one_folder(runs, "majority")
    got = _json(runs[0], "majority.json")
    command = (f"python -m tandem_app.experiments.majority_demo --out {runs[0]} --seeds {' '.join(got['seeds'])} "
               f"--k {got['k']} --threads {got['threads']}")
    return Recorded(numbers={"k": got["k"], "seeds": got["seeds"]}, runs=[command], threads=got["threads"])


DISTILL_FIELDS = ("n_traces", "traces_correct_fraction", "teacher_terse", "accuracy_before", "accuracy_after", "gain",
                  "gain_se", "student_terse")


def _distill_row(row: dict) -> dict:
    """One teacher's recorded numbers: `DISTILL_FIELDS`, and the copy shares of RLT's teachers' traces."""
    return {**{f: row[f] for f in DISTILL_FIELDS}, **({"copies": row["copies"]} if "copies" in row else {})}


@kind("distill")
def distill(runs: list[Path]) -> Recorded:
    """`python -m tandem_app.experiments.distill_demo --demo DEMO --out OUT --seeds ... --teachers ...` (one OUT
    folder): per seed and teacher, its traces and its student, and the students' pairs per seed (mean, SE)."""
    _one_folder(runs, "distill")
    got = _json(runs[0], "distill.json")
    seeds = {s: {t: _distill_row(r) for t, r in rows.items()} for s, rows in got["seeds"].items()}
    teachers = list(dict.fromkeys(t for rows in seeds.values() for t in rows))
    command = (f"python -m tandem_app.experiments.distill_demo --demo DEMO --out {runs[0]} --seeds {' '.join(seeds)} "
               f"--teachers {' '.join(teachers)}")
    pairs = {name: p["per_seed"] for name, p in got["pairs"].items()}
    return Recorded(numbers={"seeds": seeds, "pairs": pairs}, runs=[command], threads=got["protocol"]["threads"])


def _gold_split(counts: list[int], n: int, golds: list[str]) -> dict:
    """Solo accuracy over the problems whose gold the transfer variant skips (`gold_key` None: too short to locate,
    a single digit on the demo's task) and over the rest: {group: {problems, accuracy}}."""
    from tandem.rewards.answer_text import gold_key

    groups = {"skipped": [], "paid": []}
    for c, gold in zip(counts, golds, strict=True):
        groups["skipped" if gold_key(gold) is None else "paid"].append(c)
    return {g: {"problems": len(cs), "accuracy": sum(cs) / (n * len(cs)) if cs else None} for g, cs in groups.items()}


def _seniors_and_golds(run: Path) -> tuple[dict, list[str]]:
    """A demo seed folder's seniors ({arm: its eval}, the base first: `eval/results.json`; every partner arm, GRPO
    and TRL among them: `partner-eval/ARM.json`) and the golds of `test.jsonl`, the order their solo counts are in."""
    if not (run / "test.jsonl").is_file():
        raise TandemError(f"{run}/test.jsonl: missing; record a folder written by `tandem-rlvr demo`")
    golds = [json.loads(line)["answer"] for line in (run / "test.jsonl").read_text(encoding="utf-8").splitlines()
             if line.strip()]
    arms = {"base": _json(run, "eval/results.json")["base"]}
    arms |= {f.stem: _json(run / "partner-eval", f.name) for f in sorted((run / "partner-eval").glob("*.json"))
             if f.name != "results.json"}
    for arm, got in arms.items():
        if len(got["solo_counts"]) != len(golds):
            raise TandemError(f"{run}: {arm}'s solo counts cover {len(got['solo_counts'])} problems, test.jsonl "
                              f"{len(golds)}; were they evaluated on this folder's test split?")
    return arms, golds


def _record_seniors(runs: list[Path], split) -> Recorded:
    """Every seed folder's seniors, each read by `split(senior's eval, base's eval, golds)`."""
    from tandem.models.threads import choose_threads

    seeds, commands, threads = {}, [], set()
    for run in runs:
        cfg = _seed_config(run)
        arms, golds = _seniors_and_golds(run)
        seeds[str(cfg["seed"])] = {a: split(g, arms["base"], golds) for a, g in arms.items()}
        commands.append(_demo_command(cfg, run, [a for a in arms if a != "base"]))
        threads.add(choose_threads(cfg["threads"], [run / "sft" / "model"]))
    return Recorded(numbers={"seeds": seeds}, runs=commands, threads=_one(threads, runs))


@kind("solo-by-gold")
def solo_by_gold(runs: list[Path]) -> Recorded:
    """Each demo seed folder's seniors, their solo accuracy split by whether the transfer variant skips the problem's
    gold."""
    return _record_seniors(runs, lambda got, _base, golds: _gold_split(got["solo_counts"], got["solo_n"], golds))


def _difficulty_split(got: dict, base: dict, golds: list[str]) -> dict:
    """The gold split within each group of problems the base solves equally often: {c: {group: {problems,
    correct}}}, c the base's solo count (0..n); groups as `_gold_split`'s; empty groups left out."""
    from tandem.rewards.answer_text import gold_key

    if base["solo_n"] != got["solo_n"]:
        raise TandemError(f"the base was sampled {base['solo_n']} times a problem, a senior {got['solo_n']}: "
                          "its difficulty groups would not be comparable")
    strata: dict[str, dict] = {}
    for c, b, gold in zip(got["solo_counts"], base["solo_counts"], golds, strict=True):
        group = strata.setdefault(str(b), {}).setdefault("skipped" if gold_key(gold) is None else "paid",
                                                         {"problems": 0, "correct": 0})
        group["problems"] += 1
        group["correct"] += c
    return {"n": got["solo_n"], "by_base_count": dict(sorted(strata.items(), key=lambda kv: int(kv[0])))}


@kind("solo-by-difficulty")
def solo_by_difficulty(runs: list[Path]) -> Recorded:
    """Each demo seed folder's seniors, the gold split of `solo-by-gold` within each group of problems the base
    solves equally often (its solo count of n samples): the control for the problems' difficulty."""
    return _record_seniors(runs, lambda got, base, golds: _difficulty_split(got, base, golds))


CURVE_BLOCK = 10  # steps per block mean, as the notebook's curve tables
CURVE_KEYS = (ACCURACY, TERSE_FRACTION, RESPONSE_LENGTH, ZERO_VARIANCE_GROUPS, PARTNER_SCORE,
              *(f"{PARTNER_SCORE}/{term}" for term in (*TERMS, "closed")),  # the score's terms, as its step logs them
              TRANSFER_REWARD_MEAN, TRANSFER_UNDETERMINED_FRACTION,
              TIME_STEP, TIME_PARTNER)  # the times: seconds on the recording machine, under its load


def _arm_curves(metrics: Path) -> dict:
    """One RL run's block means: every CURVE_KEYS metric it logged, averaged over steps 1-10, 11-20, ..., and its
    greedy validation accuracy at each step that logged one. The run must have logged every step from 1 to a whole
    number of blocks (a resumed run's repeated step: its last row)."""
    steps: dict[int, dict] = {}
    validation: dict[str, float] = {}  # the trainer's greedy validation, at step 0 and every few steps
    for step, row in read_metrics(metrics):
        if VAL_ACCURACY in row:
            validation[str(step)] = row[VAL_ACCURACY]
        if step >= 1 and ACCURACY in row:  # step 0 holds the validation alone
            steps[step] = row
    n = len(steps)
    if not n or sorted(steps) != list(range(1, n + 1)) or n % CURVE_BLOCK:
        raise TandemError(f"{metrics}: steps 1 to {n} are not whole blocks of {CURVE_BLOCK} logged steps; "
                          "record a finished run")
    keys = [k for k in CURVE_KEYS if all(k in steps[s] for s in steps)]
    blocks = {k: [statistics.fmean(steps[s][k] for s in range(b + 1, b + CURVE_BLOCK + 1))
                  for b in range(0, n, CURVE_BLOCK)] for k in keys}
    return {"steps": n, "blocks": blocks, "validation": validation}


WARMUP = "rlt-warmup"  # RLT's writer's SFT warm-up, in a `--partner rlt` seed folder


def _warmup(run: Path) -> dict | None:
    """RLT's writer's warm-up in a seed folder: its SFT loss at each logged step and its wall seconds; None where
    the seed ran no finished warm-up."""
    if not (run / WARMUP / "summary.json").is_file():
        return None
    loss = {str(step): row[LOSS] for step, row in read_metrics(run / WARMUP / "metrics.jsonl") if LOSS in row}
    return {"loss": loss, "wall_seconds": _json(run / WARMUP, "summary.json").get("wall_seconds")}


@kind("curves")
def curves(runs: list[Path]) -> Recorded:
    """The training curves of each finished RL run in each seed folder OUT/seed-S (`grpo`, `tandem`, `partner-*`):
    per seed and senior, the block means over CURVE_BLOCK steps of each metric of CURVE_KEYS it logged and the run's
    wall seconds; the runs stopped before their end (no summary.json) are named under `unfinished`; RLT's writer's
    warm-up, where a seed ran it, under `warmups`."""
    from tandem.models.threads import choose_threads

    seeds, unfinished, warmups, commands, threads = {}, {}, {}, [], set()
    for run in runs:
        cfg = _seed_config(run)
        logged = [d for d in sorted(run.iterdir()) if (d.name in ("grpo", "tandem") or d.name.startswith("partner-"))
                  and (d / "metrics.jsonl").is_file()]
        # a run stopped before its end wrote no summary.json: it is named, not recorded (a finished run that lost a
        # step is refused by _arm_curves)
        arms = {d.name.removeprefix("partner-"): {**_arm_curves(d / "metrics.jsonl"),
                                                  "wall_seconds": _json(d, "summary.json").get("wall_seconds")}
                for d in logged if (d / "summary.json").is_file()}
        if not arms:
            raise TandemError(f"{run}: no finished RL run (grpo/, tandem/, partner-*/ with metrics.jsonl and "
                              "summary.json); record a demo seed folder")
        seeds[str(cfg["seed"])] = arms
        stopped = [d.name.removeprefix("partner-") for d in logged if not (d / "summary.json").is_file()]
        if stopped:
            unfinished[str(cfg["seed"])] = stopped
        if (warmup := _warmup(run)) is not None:
            warmups[str(cfg["seed"])] = warmup
        commands.append(_demo_command(cfg, run, [a for a in arms if a not in ("grpo", "tandem")]))
        threads.add(choose_threads(cfg["threads"], [run / "sft" / "model"]))
    return Recorded(numbers={"block": CURVE_BLOCK, "seeds": seeds, "unfinished": unfinished, "warmups": warmups},
                    runs=commands, threads=_one(threads, runs))


CONTROL_FIELDS = ("target", "n", "temperature", "mean_score", "pairwise", "reads_last_number", "terse_share",
                  "own_beats_shuffled_fraction", "own_minus_shuffled_mean")


@kind("partner-score-controls")
def partner_score_controls(runs: list[Path]) -> Recorded:
    """`scripts/partner_score_validity.py --demo DEMO --target T --out RUN/validity.json` on each base and target
    (RUN named for them):
    the mean score of each explanation kind and the pairwise win rates, without paths or per-problem rows."""
    bases, threads = {}, set()
    for run in runs:
        got = _json(run, "validity.json")
        threads.add(got["provenance"]["machine"]["torch_threads"])
        made = got["provenance"]  # the bench's own commit: the record's stamp is the recording checkout's
        demo = got.get("demo") or {}  # the demo whose base was scored (`--demo`): its seed and shape, not its path
        bases[run.name] = {**{f: got[f] for f in CONTROL_FIELDS},
                           **({"demo": {"seed": demo["seed"], "quick": demo["quick"]}} if demo else {}),
                           "bench_commit": made["commit"][:7] + (" plus uncommitted changes" if made["dirty"] else "")}
    return Recorded(numbers={"bases": bases}, runs=[f"python scripts/partner_score_validity.py --demo DEMO_OF_{r.name} "
                                                      f"--target {bases[r.name]['target']} --n {bases[r.name]['n']} "
                                                      f"--out {r}/validity.json" for r in runs],
                    threads=_one(threads, runs))


SMOKE_STEP_FIELDS = ("status", "seconds", "reason")
ARM_FIELDS = ("samples", "solved", "weight_gap_grpo_tandem", "weight_gap_grpo_sft", "tandem_train_senior_share",
              "wall_seconds")


@kind("gpu-smoke")
def gpu_smoke(runs: list[Path]) -> Recorded:
    """One lent GPU machine's folder: `gpu_smoke.json` of `bash scripts/gpu_smoke.sh --out RUN`, and, where they are,
    `cuda/demo_arms.json` and `cpu/demo_arms.json` of `scripts/gpu_demo_arms.py --device D --out RUN/D` and the
    machine's `lscpu` model line (`cpu_model.txt`). The record's machine is that machine, as its files state it."""
    if len(runs) != 1:
        raise TandemError("gpu-smoke records one machine's folder; give one --runs folder per record")
    run = runs[0]
    smoke = _json(run, "gpu_smoke.json")
    if smoke.get("mode") != "gpu":
        raise TandemError(f"{run}/gpu_smoke.json is a {smoke.get('mode')!r} run; record the smoke of a GPU machine")
    work = re.compile(r"/tmp/gpu-smoke-[^/\s]+")  # the smoke's temporary --work folder: a machine path, not a fact
    steps = {s["name"]: {f: work.sub("WORK", s[f]) if isinstance(s[f], str) else s[f] for f in SMOKE_STEP_FIELDS}
             for s in smoke["steps"]}
    demo = next((s["details"] for s in smoke["steps"] if s["name"] == "demo_quick"), {})
    numbers = {"smoke": {"steps": steps, "wall_seconds": smoke["wall_seconds"], "budget_seconds": smoke["budget_seconds"],
                         "started_utc": smoke["started_utc"], "demo_quick_accuracy": demo.get("accuracy"),
                         "demo_quick_phase_seconds": demo.get("phase_seconds")},
               "arms": {}}
    commands = ["bash scripts/gpu_smoke.sh --out RUN"]
    for device in ("cuda", "cpu"):
        if (run / device / "demo_arms.json").is_file():
            arms = _json(run / device, "demo_arms.json")
            if arms["errors"]:
                raise TandemError(f"{run}/{device}/demo_arms.json: seeds failed ({arms['errors']}); rerun them")
            numbers["arms"][device] = {str(s["seed"]): {f: s[f] for f in ARM_FIELDS} for s in arms["seeds"]}
            seeds = " ".join(str(s["seed"]) for s in arms["seeds"])
            commands.append(f"python scripts/gpu_demo_arms.py --device {device} --seeds {seeds} --out RUN/{device}")
    m = smoke["machine"]
    lscpu = run / "cpu_model.txt"
    cpu = lscpu.read_text().split(":", 1)[1].strip() if lscpu.is_file() else None
    machine = {"platform": f"{m['gpu']} (sm {m['capability']}), driver {m['driver']} (CUDA {m['driver_cuda']})",
               "cpu_model": cpu, "cores": None, "threads": None, "python": m["python"],
               "packages": {"torch": m["torch"]}, "gpu": m["gpu"]}
    return Recorded(numbers=numbers, runs=commands, machine=machine)


def _one(values: set, runs: list[Path]):
    if len(values) != 1:
        raise TandemError(f"the runs {', '.join(map(str, runs))} used different torch thread counts; record them apart")
    return values.pop()


def made_at(commits: list[str], repo: Path = REPO) -> list[str]:
    """The commits the runs were made at (they do not stamp themselves), each checked to exist, as short shas."""
    import subprocess

    out = []
    for c in commits:
        got = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "--verify", "--quiet", f"{c}^{{commit}}"],
                             capture_output=True, text=True)
        if got.returncode != 0:
            raise TandemError(f"--made-at {c}: no such commit in this checkout; give the commit the runs were made at")
        out.append(got.stdout.strip())
    return out


# What a repeat compares, per kind: each seed's units (a senior, or the whole seed table) and their numbers
REPEAT_UNITS: dict[str, Callable[[dict], dict[str, dict]]] = {
    # a senior's own measurements: the paired differences follow from them and from the other seniors
    "partner": lambda seed: {name: {f: r[f] for f in PARTNER_FIELDS if f in r} for name, r in seed.items()},
    "demo": lambda seed: {"demo": seed["numbers"]},  # every number of the seed table, differences included
}


def repeat_of(numbers: dict, earlier: dict, earlier_path: Path, kind_name: str = "partner") -> dict:
    """Each unit (`REPEAT_UNITS`) that this record and `earlier`, of the same kind, both hold on a seed: how many
    of the numbers both hold are equal to the last bit, and the largest absolute difference. The test of "a run
    repeats bit for bit on one host" (retrained, or resumed, from the same seed, code, torch build and threads)."""
    if earlier.get("kind") != kind_name:
        raise TandemError(f"--repeats {earlier_path}: a record of kind {earlier.get('kind')!r}; "
                          f"give a {kind_name} record")
    units = REPEAT_UNITS[kind_name]
    seeds = {}
    for seed, entry in numbers["seeds"].items():
        if seed not in earlier["numbers"]["seeds"]:
            continue
        now_units, then_units = units(entry), units(earlier["numbers"]["seeds"][seed])
        for name in sorted(set(now_units) & set(then_units)):
            now, then = now_units[name], then_units[name]
            shared = [f for f in now if f in then]
            seeds.setdefault(seed, {})[name] = {
                "compared": len(shared), "equal": sum(now[k] == then[k] for k in shared),
                "largest_difference": max((abs(now[k] - then[k]) for k in shared), default=0.0)}
    if not seeds:
        raise TandemError(f"--repeats {earlier_path}: no senior on a seed both records hold; nothing to compare")
    shown = earlier_path.name if earlier_path.is_absolute() else earlier_path.as_posix()  # no machine path
    return {"record": shown, "made_at": earlier.get("made_at") or [earlier["commit"]["short"]],
            "cpu_model": earlier["machine"]["cpu_model"], "threads": earlier["machine"].get("threads"),
            "seeds": seeds}


def record(kind_name: str, runs: list[Path], command: str, repo: Path = REPO, made: list[str] | None = None,
           repeats: Path | None = None) -> dict:
    """The stamped record of experiment `kind_name` over `runs` (made at the commits `made`, when given; compared,
    number by number, with the earlier partner record `repeats`, when given)."""
    if kind_name not in KINDS:
        raise TandemError(f"unknown result kind {kind_name!r}; known: {', '.join(sorted(KINDS))}")
    missing = [str(r) for r in runs if not Path(r).is_dir()]
    if missing:
        raise TandemError(f"no such run folder: {', '.join(missing)}")
    if repeats is not None and kind_name not in REPEAT_UNITS:
        raise TandemError(f"--repeats compares {' and '.join(REPEAT_UNITS)} records; {kind_name!r} is not one "
                          "(drop --repeats)")
    got = KINDS[kind_name]([Path(r) for r in runs])
    if repeats is not None:
        got.numbers["repeat_of"] = repeat_of(got.numbers, read_record(repeats), repeats, kind_name)
    rec = stamp(kind_name, got.numbers, command, threads=got.threads, runs=got.runs, repo=repo)
    if got.machine:
        rec["machine"] = got.machine
    if made:
        rec["made_at"] = made_at(made, repo)
    return rec


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("kind", choices=sorted(KINDS), help="the experiment kind the run folders hold")
    p.add_argument("--runs", type=Path, nargs="+", required=True,
                   help="finished run folders: one per seed, or the one --out folder of leak, majority and distill")
    p.add_argument("--out", type=Path, required=True, help="the result file to write (model_spec/results/NAME.json)")
    p.add_argument("--made-at", nargs="+", default=None, metavar="COMMIT",
                   help="the commit(s) the runs were made at, when not this checkout's (the record names both)")
    p.add_argument("--repeats", type=Path, default=None, metavar="RECORD",
                   help="partner and demo only: an earlier record of the same kind whose seeds these runs retrained "
                        "or resumed; each senior (demo: each seed table) both hold is compared number by number "
                        "(model_spec/results/NAME.json)")
    args = p.parse_args(argv)
    command = shlex.join(["python", "scripts/record_results.py", *(sys.argv[1:] if argv is None else argv)])

    def write(args) -> int:
        print(f"wrote {write_record(args.out, record(args.kind, args.runs, command, made=args.made_at, repeats=args.repeats))}")
        return 0

    return run_reporting_errors(write, args)  # a mistake: one `error: ...` line, exit 2


if __name__ == "__main__":
    sys.exit(main())
