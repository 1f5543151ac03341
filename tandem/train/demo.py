"""The demo: the paper's three findings in miniature, end to end on a CPU.

Phases (each writes its own directory under OUT and is skipped when already finished,
continued from its checkpoint when interrupted):
1. `tiny/`  — a tiny Qwen3-config model and tokenizer (`tandem.zoo.build_tiny`).
2. `sft/`   — SFT on worked solutions: the pre-RL base (`sft/model`).
3. `trl/`, `grpo/` — GRPO from the base with tandem rollouts (junior = the frozen base)
   and with solo rollouts; same seed, problems, budget and hyper-parameters.
4. `eval/`  — solo and handoff accuracy (pass@k) of the base, TRL and GRPO seniors on
   the held-out test split, and the drift of each senior's token usage from the base.
5. `report.md` and figures (`reward_curves.png`, `accuracy_bars.png`).
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from tandem.jsonl import write_json
from tandem.models import load_model, load_tokenizer
from tandem.task import TaskConfig, generate_problems
from tandem.train.config import config_to_dict
from tandem.train.data import prompt_ids_batch
from tandem.train.evaluate import EvalConfig, drift_js, evaluate_senior, junior_legibility
from tandem.train.grpo_trainer import GRPOTrainer, TrainConfig
from tandem.train.report import write_report
from tandem.train.sft import SFTConfig, run_sft

METHODS = ("trl", "grpo")
MODELS = ("base", "grpo", "trl")


# The demo's task: small numbers and 2-3 operations, so that a ~1M-parameter base is right
# about half the time greedily and less often at temperature 1 — room for RL to show.
DEMO_TASK = TaskConfig(min_steps=2, max_steps=3, max_start=20, max_operand=9, max_factor=3)


@dataclass
class DemoConfig:
    """Budgets of the demo's phases; `demo_config` gives the default and the --quick preset."""

    seed: int = 0
    quick: bool = False
    threads: int = 0  # torch CPU threads; 0 = torch's default (all cores)
    task: TaskConfig = field(default_factory=lambda: DEMO_TASK)
    sft_steps: int = 400
    sft_batch_size: int = 32
    sft_lr: float = 3e-3
    rl_steps: int = 80
    prompts_per_step: int = 32
    group_size: int = 4
    ppo_mini_batches: int = 2
    rl_lr: float = 5e-5
    max_new_tokens: int = 96
    val_every: int = 10
    n_val_problems: int = 128
    eval: EvalConfig = field(default_factory=EvalConfig)


def demo_config(quick: bool = False, seed: int = 0) -> DemoConfig:
    cfg = DemoConfig(seed=seed)
    if quick:
        cfg = replace(
            cfg,
            quick=True,
            sft_steps=60,
            sft_batch_size=16,
            rl_steps=3,
            prompts_per_step=4,
            group_size=4,
            ppo_mini_batches=1,
            val_every=0,
            n_val_problems=8,
            eval=EvalConfig(n_problems=16, n_samples=2),
        )
    return cfg


def sft_config(cfg: DemoConfig, out: Path) -> SFTConfig:
    return SFTConfig(
        model=str(out / "tiny"),
        out=str(out / "sft"),
        seed=cfg.seed,
        steps=cfg.sft_steps,
        batch_size=cfg.sft_batch_size,
        lr=cfg.sft_lr,
        n_val_problems=cfg.n_val_problems,
        max_new_tokens=cfg.max_new_tokens,
        threads=cfg.threads,
        task=cfg.task,
        save_every=max(1, cfg.sft_steps // 4),
        log_every=max(1, cfg.sft_steps // 12),
    )


def train_config(cfg: DemoConfig, out: Path, method: str) -> TrainConfig:
    """Identical hyper-parameters for both methods; only `method` differs."""
    return TrainConfig(
        method=method,
        model=str(out / "sft" / "model"),
        out=str(out / method),
        seed=cfg.seed,
        steps=cfg.rl_steps,
        prompts_per_step=cfg.prompts_per_step,
        group_size=cfg.group_size,
        ppo_mini_batches=cfg.ppo_mini_batches,
        lr=cfg.rl_lr,
        max_new_tokens=cfg.max_new_tokens,
        val_every=cfg.val_every,
        n_val_problems=cfg.n_val_problems,
        save_every=min(10, cfg.rl_steps),
        threads=cfg.threads,
        task=cfg.task,
    )


def _done(run_dir: Path) -> bool:
    return (run_dir / "summary.json").is_file()


def run_demo(cfg: DemoConfig, out: str | Path, progress: bool = True) -> Path:
    """Run every unfinished phase and write OUT/report.md; return its path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "demo_config.json", config_to_dict(cfg))
    timings = _load_json(out / "timings.json")

    def phase(name, fn):
        t0 = time.time()
        fn()
        timings[name] = timings.get(name, 0.0) + time.time() - t0
        write_json(out / "timings.json", timings)

    if not (out / "tiny" / "tandem_zoo.json").is_file():  # tandem_zoo.json is written last
        from tandem.zoo import build_tiny

        shutil.rmtree(out / "tiny", ignore_errors=True)  # an interrupted build
        phase("build_tiny", lambda: build_tiny(out / "tiny", seed=cfg.seed))
    sft = sft_config(cfg, out)
    if not _done(Path(sft.out)):
        phase("sft", lambda: run_sft(sft, resume=Path(sft.out).exists(), progress=progress))
    for method in METHODS:
        tc = train_config(cfg, out, method)
        if not _done(Path(tc.out)):
            phase(f"train_{method}", lambda: GRPOTrainer(tc, progress=progress).train(resume=Path(tc.out).exists()))
    if not (out / "eval" / "results.json").is_file():
        phase("eval", lambda: evaluate_all(cfg, out))
    return write_report(out, timings)


def evaluate_all(cfg: DemoConfig, out: Path) -> dict:
    """Evaluate base, GRPO and TRL seniors (junior = the base): accuracy, drift and legibility."""
    import torch

    if cfg.threads:
        torch.set_num_threads(cfg.threads)
    base_dir = out / "sft" / "model"
    tokenizer, junior = load_tokenizer(base_dir), load_model(base_dir)
    problems = generate_problems("test", cfg.eval.n_problems, cfg.seed, cfg.task)
    prompts = prompt_ids_batch(tokenizer, problems)
    ev = replace(cfg.eval, max_new_tokens=cfg.max_new_tokens)
    results, tokens = {}, {}
    for name in MODELS:
        path = out / "eval" / f"{name}.json"
        if not path.is_file():
            senior_dir = base_dir if name == "base" else out / name / "model"
            r = evaluate_senior(senior_dir, base_dir, problems, ev, tag=f"test/{cfg.seed}")
            flat_prompts = [p for p, g in zip(prompts, r["solo_tokens"]) for _ in g]
            flat_tokens = [t for g in r["solo_tokens"] for t in g]
            r["junior_ce_on_solo"] = junior_legibility(junior, flat_prompts, flat_tokens)
            write_json(path, r)
        results[name] = _load_json(path)
        tokens[name] = results[name].pop("solo_tokens")
    flat = {name: [t for g in tokens[name] for t in g] for name in MODELS}
    for name in ("grpo", "trl"):
        results[name]["drift_js_vs_base"] = drift_js(flat[name], flat["base"], tokenizer)
    # Sampling-noise floor: the base against itself, even vs odd samples of each problem.
    even = [t for g in tokens["base"] for t in g[0::2]]
    odd = [t for g in tokens["base"] for t in g[1::2]]
    results["base"]["drift_js_vs_base"] = drift_js(even, odd, tokenizer) if even and odd else float("nan")
    results["_meta"] = {"n_problems": len(problems), "eval": config_to_dict(ev)}
    write_json(out / "eval" / "results.json", results)
    return results


def _load_json(path: Path) -> dict:
    return json.loads(path.read_text()) if path.is_file() else {}
