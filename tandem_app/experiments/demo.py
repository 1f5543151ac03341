"""The demo: the paper's three findings in miniature, end to end on a CPU.

Phases (each writes its own directory under OUT and is skipped when already finished,
continued from its checkpoint when interrupted):
1. `tiny/`  — a tiny Qwen3-config model and tokenizer (`tandem_app.zoo.build_tiny`).
2. `sft/`   — SFT on a demonstrator's worked solutions: the pre-RL base (`sft/model`).
3. `tandem/`, `grpo/` — GRPO from the base with tandem rollouts (junior = the frozen base)
   and with solo rollouts; same seed, problems, budget and hyper-parameters.
4. `eval/`  — solo and handoff accuracy of the base, TRL and GRPO seniors on the
   held-out test split (also written as `test.jsonl`, which `tandem-rlvr eval-solo` and
   `eval-handoff` read as a benchmark), drift of each senior's token usage from the base,
   and the drift of a second sample set of the base (the noise floor).
5. `report.md` and figures (`reward_curves.png`, `accuracy_bars.png`).

Why this task and base (measured numbers and what else was tried:
`model_spec/DEMO_DESIGN.md`). Every problem is four additions or subtractions of
small numbers. The demonstrator writes a solution in one of two notations: the common
verbose one keeps the running total ("She buys 5 more: 12 + 5 = 17."), the terse one
keeps only the net change since the start ("0 + 5 = 5.") and adds the start back at
the end. After each terse step the demonstrator drops back to the verbose notation
with probability 0.3, and then usually misreads the net change as the total; that is
the only error it makes. So the base is right whenever it stays in one notation and
wrong when it drops out of the terse one: a random, fixable error (pass@4 near 1 where
pass@1 is about 0.7), which RL removes by making the senior keep to one notation.

RL runs under a response budget of 82 tokens up to the answer, which a terse solution
always fits and a verbose one fits on about two problems in three: alone, the terse
notation wins, so GRPO moves to it. A TRL senior writes only half the words; the junior
(the base) drops out of the terse notation where it writes, so for the team the terse
notation loses and TRL keeps the verbose one. In the handoff evaluation the junior
writes every other step: after a GRPO senior's terse steps it drops out and misreads,
after a TRL senior's verbose steps it simply carries on. Evaluation gives every model
room (`eval.sampling.max_new_tokens`, 128 tokens), so solo accuracy measures reasoning, not the
training budget.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from tandem.models.threads import apply_threads
from tandem.io import run_lock
from tandem.io.jsonl import write_json, write_jsonl
from tandem.models.loading import load_model, load_tokenizer
from tandem.rollout.sampling import SamplingConfig
from tandem_app.task import DEMO_DEMONSTRATIONS, DEMO_TASK, Demonstrations, TaskConfig, generate_problems
from tandem.io.config_files import config_to_dict
from tandem_app.train.data import prompt_ids_batch
from tandem_app.train.evaluate import EvalConfig, drift_js, evaluate_senior, junior_legibility
from tandem_app.train.grpo_trainer import GRPOTrainer
from tandem_app.experiments.demo_folder import DEMO_RECORD, SEED_FOLDERS, check_own_out
from tandem_app.experiments.method_runs import can_run_side_by_side, train_side_by_side
from tandem_app.experiments.report import MODEL_DIRS, write_report
from tandem_app.train.sft import SFTConfig, run_sft
from tandem_app.train.train_config import TrainConfig
from tandem_app.zoo import SMALL_SHAPE, TinyModelConfig

METHODS = ("tandem", "grpo")  # the directories and result keys; reports say TRL, the paper's name
MODELS = ("base", "grpo", "tandem")
PHASE_WORDS = {"build": "building the tiny model", "sft": "SFT of the pre-RL base", "train": "RL of the seniors",
               "eval": "evaluating base, GRPO and TRL seniors"}  # each phase's header, by its first word
TEST_SPLIT = "test.jsonl"  # the test split as an eval benchmark: {"id", "problem", "answer"} per line

# `--quick`: the zoo's small shape (2 layers, width 64), two steps of smaller numbers (the
# arithmetic half a minute of SFT learns).
QUICK_MODEL = SMALL_SHAPE
QUICK_TASK = replace(DEMO_TASK, min_steps=2, max_steps=2, max_start=9, max_operand=4)


def _demo_sft() -> SFTConfig:
    return SFTConfig(steps=700, batch_size=32, lr=3e-3, n_val_problems=64, save_every=175, log_every=58)


def _demo_train() -> TrainConfig:
    return TrainConfig(steps=100, prompts_per_step=12, group_size=8, ppo_mini_batches=2, lr=1e-4,
                       sampling=SamplingConfig(max_new_tokens=82), val_every=20, n_val_problems=64, save_every=10)


@dataclass
class DemoConfig:
    """The demo's pipeline: settings every phase shares, then each phase's own config.

    `sft` and `train` hold the phases' hyper-parameters; `sft_config` and `train_config` fill
    in what the pipeline decides once (paths under OUT, seed, threads, task, demonstrations,
    the method, and the SFT's greedy-validation budget = the eval's). `train` is used by both
    methods unchanged; `sampling.max_new_tokens` (82) is the RL response budget.
    """

    seed: int = 0
    quick: bool = False
    threads: int = 0  # torch CPU threads; 0 = auto: 1 for small models, else torch's default (tandem/models/threads.py)
    model: TinyModelConfig = field(default_factory=TinyModelConfig)  # the tiny model's shape (`tiny/`)
    task: TaskConfig = field(default_factory=lambda: DEMO_TASK)
    demos: Demonstrations = field(default_factory=lambda: DEMO_DEMONSTRATIONS)
    sft: SFTConfig = field(default_factory=_demo_sft)
    train: TrainConfig = field(default_factory=_demo_train)
    eval: EvalConfig = field(default_factory=EvalConfig)


def demo_config(quick: bool = False, seed: int = 0, threads: int = 0) -> DemoConfig:
    cfg = DemoConfig(seed=seed, threads=threads)
    if quick:
        # About a minute on 2 cores (model_spec/PERFORMANCE.md): the small shape, two-step
        # problems with smaller numbers (the same notations and demonstrator), 800 SFT steps of
        # 8, so the base is right 0.35-0.75 of the time (seeds 0-2); 12 RL steps of 8 prompts x 8
        # at lr 2e-4 (5e-4 pushed two of three seeds below their base), TRL and GRPO side by
        # side; 64 test problems x 2 samples.
        cfg = replace(
            cfg,
            quick=True,
            model=QUICK_MODEL,
            task=QUICK_TASK,
            sft=replace(cfg.sft, steps=800, batch_size=8, lr=5e-3, warmup_steps=10, n_train_problems=4000,
                        n_val_problems=8, save_every=400, log_every=80),
            train=replace(cfg.train, steps=12, prompts_per_step=8, group_size=8, ppo_mini_batches=1, lr=2e-4,
                          val_every=4, n_val_problems=16, save_every=6),
            eval=EvalConfig(n_problems=64, n_samples=2),
        )
    return cfg


def sft_config(cfg: DemoConfig, out: Path) -> SFTConfig:
    return replace(cfg.sft, model=str(out / "tiny"), out=str(out / "sft"), seed=cfg.seed, threads=cfg.threads,
                   task=cfg.task, demos=cfg.demos, max_new_tokens=cfg.eval.sampling.max_new_tokens)


def train_config(cfg: DemoConfig, out: Path, method: str) -> TrainConfig:
    """Identical hyper-parameters for both methods; only `method` differs."""
    return replace(cfg.train, method=method, model=str(out / "sft" / "model"), out=str(out / method), seed=cfg.seed,
                   threads=cfg.threads, task=cfg.task)


def recorded_config(cfg: DemoConfig, out: Path) -> DemoConfig:
    """What OUT/demo_config.json records: `cfg` with `sft` and `train` as the phases run them (task, demonstrations,
    seed, paths filled in), so the record reads as what ran and rebuilds it; `train` holds what both methods share
    (`train_config` sets each one's `method` and `out`)."""
    ran = train_config(cfg, out, cfg.train.method)
    return replace(cfg, sft=sft_config(cfg, out), train=replace(ran, out=cfg.train.out))


def _done(run_dir: Path) -> bool:
    return (run_dir / "summary.json").is_file()


def run_demo(cfg: DemoConfig, out: str | Path, progress: bool = True) -> Path:
    """Run every unfinished phase and write OUT/report.md, holding OUT's lock; return the report's path."""
    check_own_out(out, DEMO_RECORD)
    with run_lock.hold(out):  # each phase's own folder is locked again by its run
        return _run_demo(cfg, Path(out), progress)


def _run_demo(cfg: DemoConfig, out: Path, progress: bool) -> Path:
    write_json(out / DEMO_RECORD, config_to_dict(recorded_config(cfg, out)))
    timings = _load_json(out / "timings.json")

    def phase(name, fn):
        # One header per phase, bars or not: with --no-progress it is all a long run shows before its table.
        print(f"demo {out.name}: {PHASE_WORDS.get(name.split('_')[0], name)} ({name}) ...", flush=True)
        t0 = time.time()
        fn()
        timings[name] = timings.get(name, 0.0) + time.time() - t0
        write_json(out / "timings.json", timings)

    if not (out / "tiny" / "tandem_zoo.json").is_file():  # tandem_zoo.json is written last
        from tandem_app.zoo import build_tiny

        shutil.rmtree(out / "tiny", ignore_errors=True)  # an interrupted build
        phase("build_tiny", lambda: build_tiny(out / "tiny", seed=cfg.seed, cfg=cfg.model))
    sft = sft_config(cfg, out)
    if not _done(Path(sft.out)):
        phase("sft", lambda: run_sft(sft, resume=Path(sft.out).exists(), progress=progress))
    todo = [tc for tc in (train_config(cfg, out, m) for m in METHODS) if not _done(Path(tc.out))]
    if can_run_side_by_side(todo):  # a core each: the methods at once, timed as one phase
        phase("train_" + "+".join(tc.method for tc in todo), lambda: train_side_by_side(todo, progress))
    else:
        for tc in todo:
            phase(f"train_{tc.method}", lambda: GRPOTrainer(tc, progress=progress).train(resume=Path(tc.out).exists()))
    if not (out / TEST_SPLIT).is_file():
        rows = [{"id": p.id, "problem": p.prompt, "answer": p.answer} for p in test_problems(cfg)]
        write_jsonl(out / TEST_SPLIT, rows)
    if not (out / "eval" / "results.json").is_file():
        phase("eval", lambda: evaluate_all(cfg, out, progress))
    return write_report(out, timings)


def test_problems(cfg: DemoConfig) -> list:
    """The held-out test split the demo evaluates on (and writes as `TEST_SPLIT`)."""
    return generate_problems("test", cfg.eval.n_problems, cfg.seed, cfg.task)


def evaluate_all(cfg: DemoConfig, out: Path, progress: bool = True) -> dict:
    """Evaluate base, GRPO and TRL seniors (junior = the base): accuracy, notation, drift and legibility."""
    import torch

    base_dir = out / MODEL_DIRS["base"]
    apply_threads(cfg.threads, [base_dir])
    tokenizer, junior = load_tokenizer(base_dir), load_model(base_dir)
    problems = test_problems(cfg)
    prompts = prompt_ids_batch(tokenizer, problems)
    tag = f"test/{cfg.seed}"
    results, tokens = {}, {}
    for name in MODELS:
        path = out / "eval" / f"{name}.json"
        if not path.is_file():
            senior_dir = out / MODEL_DIRS[name]
            r = evaluate_senior(senior_dir, base_dir, problems, cfg.eval, tag=tag, progress=progress)
            flat_prompts = [p for p, g in zip(prompts, r["solo_tokens"]) for _ in g]
            flat_tokens = [t for g in r["solo_tokens"] for t in g]
            r["junior_ce_on_solo"] = junior_legibility(junior, flat_prompts, flat_tokens)
            write_json(path, r)
        results[name] = _load_json(path)
        tokens[name] = [t for g in results[name].pop("solo_tokens") for t in g]
    # The noise floor: a second sample set of the base (other sampling seed, same problems
    # and sample count) against the first, measured exactly as each senior's drift.
    again = out / "eval" / "base_again.json"
    if not again.is_file():
        again_cfg = replace(cfg.eval, sampling=replace(cfg.eval.sampling, seed=cfg.eval.sampling.seed + 1))
        r = evaluate_senior(base_dir, base_dir, problems, again_cfg, tag, handoff=False, progress=progress)
        write_json(again, {"solo_tokens": r["solo_tokens"]})
    base_again = [t for g in _load_json(again)["solo_tokens"] for t in g]
    for name in ("grpo", "tandem"):
        results[name]["drift_js_vs_base"] = drift_js(tokens[name], tokens["base"], tokenizer)
    results["base"]["drift_js_vs_base"] = drift_js(base_again, tokens["base"], tokenizer)
    results["_meta"] = {"n_problems": len(problems), "eval": config_to_dict(cfg.eval)}
    write_json(out / "eval" / "results.json", results)
    return results


def run_seeds(seeds: list[int], out: str | Path, quick: bool = False, progress: bool = True, threads: int = 0) -> Path:
    """The demo once per seed (OUT/seed-S), then OUT/seeds.md: each number's mean and spread."""
    from tandem_app.experiments.seeds import write_seed_table

    check_own_out(out, SEED_FOLDERS)
    with run_lock.hold(out):
        for seed in seeds:
            run_demo(demo_config(quick=quick, seed=seed, threads=threads), Path(out) / f"seed-{seed}", progress=progress)
        return write_seed_table(Path(out), seeds)


def _load_json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}
