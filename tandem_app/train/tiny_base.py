"""A tiny base that writes real answers, for the scale path's tests and smoke runs.

The scale lane runs vLLM and verl on CPU with models the project builds itself. A
random tiny model repeats one token forever, which checks little: no step or sentence
boundary ever appears, and every reward is 0, so GRPO advantages and gradients are 0.
This module makes a tiny model that is worth running: the zoo's tiny Qwen3 model SFT'd
for a few hundred steps on the one-operation version of the synthetic task, where it
is right about half the time (greedy ~0.6-0.7, sampled at temperature 1 ~0.3; measured
on CPU). It writes reasoning steps separated by blank lines and ends in `\\boxed{}`, so
the real grader gives it real, varied rewards.

    python -m tandem_app.train.tiny_base --out DIR [--seed 0] [--steps 150] [--task-rows 256]

writes DIR/model (the SFT'd HF model) and DIR/task_{train,test}.jsonl (problems in the
`{"id", "problem", "answer", "source"}` format `scripts/prepare_deepscaler.py` reads).
The prompts are the bare problem, as in SFT: build the parquet with `--instruction ""`.
A finished DIR is reused (its `tiny_base.json` records the recipe).
"""

from __future__ import annotations

import argparse
import json
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from tandem.errors import TandemError, run_reporting_errors
from tandem.io.jsonl import write_json
from tandem_app.task import TaskConfig, generate_problems

# One operation on small numbers: learnable in ~150 SFT steps by the zoo's tiny model.
SMOKE_TASK = TaskConfig(min_steps=1, max_steps=1, max_start=9, max_operand=9, max_factor=3)
SOURCE = "tandem-task"
RECIPE_FILE = "tiny_base.json"


@dataclass
class TinyBaseConfig:
    """How the tiny base is made; every field is recorded next to the model."""

    seed: int = 0  # seeds the zoo's initial weights and the SFT data order
    steps: int = 150  # SFT steps (batch 32, lr 3e-3)
    task_rows: int = 256  # problems written to each task JSONL
    threads: int = 0  # torch CPU threads; 0 = auto (tandem/models/threads.py)
    shape: str = "default"  # the zoo's shape: default, or small (tandem_app.zoo.SMALL_SHAPE: a junior of another size)


def write_task_jsonl(path: Path, split: str, n: int, seed: int = 0, task: TaskConfig = SMOKE_TASK) -> Path:
    """`n` synthetic problems of `split` as JSONL rows {"id", "problem", "answer", "source"}."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {"id": p.id, "problem": p.prompt, "answer": p.answer, "source": SOURCE}
        for p in generate_problems(split, n, seed, task)
    ]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    tmp.replace(path)
    return path


def _small_shape():
    from tandem_app.zoo import SMALL_SHAPE

    return SMALL_SHAPE


SHAPES = {"default": lambda: None, "small": _small_shape}  # None: the zoo's default shape
# The scale lane's weaker junior of another size (tests/conftest.py, scripts/scale_smoke.sh's split run)
SMALL_JUNIOR = TinyBaseConfig(seed=2, steps=80, shape="small")


def build_tiny_base(out: str | Path, cfg: TinyBaseConfig | None = None, progress: bool = False) -> Path:
    """Build (or reuse) the tiny base under `out`; returns `out/model`."""
    from tandem_app.train.sft import SFTConfig, run_sft
    from tandem_app.zoo import build_tiny

    cfg, out = cfg or TinyBaseConfig(), Path(out)
    recipe = json.loads(json.dumps({**asdict(cfg), "task": asdict(SMOKE_TASK)}))  # as read back from disk
    done = out / RECIPE_FILE
    if done.is_file():
        if json.loads(done.read_text()) != recipe:
            raise TandemError(f"{out} holds a tiny base made with another recipe; pick another --out or delete it")
        return out / "model"
    if cfg.shape not in SHAPES:
        raise TandemError(f"unknown tiny-base shape {cfg.shape!r}; choose {' or '.join(SHAPES)}")
    init = build_tiny(out / "init", seed=cfg.seed, cfg=SHAPES[cfg.shape]())
    sft = SFTConfig(model=str(init), out=str(out / "sft"), seed=cfg.seed, steps=cfg.steps, batch_size=32,
                    lr=3e-3, warmup_steps=20, n_val_problems=32, max_new_tokens=64, save_every=10**9,
                    threads=cfg.threads, task=SMOKE_TASK)
    summary = run_sft(sft, resume=(out / "sft").is_dir(), progress=progress)
    model = out / "model"
    if Path(summary["model"]).is_dir():  # else an interrupted build moved it already
        if model.exists():  # left by an interrupted build
            shutil.rmtree(model)
        Path(summary["model"]).rename(model)
    write_task_jsonl(out / "task_train.jsonl", "train", cfg.task_rows, cfg.seed)
    write_task_jsonl(out / "task_test.jsonl", "test", cfg.task_rows, cfg.seed)
    write_json(out / "sft_summary.json", {**summary, "model": str(model)})
    write_json(done, recipe)  # written last: marks the directory complete
    return model


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--out", required=True, type=Path, help="directory for model/ and the task JSONL files")
    ap.add_argument("--seed", type=int, default=TinyBaseConfig.seed, help="initial weights and data order (default: %(default)s)")
    ap.add_argument("--steps", type=int, default=TinyBaseConfig.steps, help="SFT steps (default: %(default)s)")
    ap.add_argument("--task-rows", type=int, default=TinyBaseConfig.task_rows, help="problems per task JSONL (default: %(default)s)")
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads; 0 = auto: 1 for small models (tandem/models/threads.py)")
    ap.add_argument("--shape", default="default", choices=sorted(SHAPES),
                    help="the zoo shape: default, or small (another depth, width and head counts; one vocabulary)")
    ap.add_argument("--progress", action="store_true", help="show the SFT progress bar")
    args = ap.parse_args(argv)

    def run(a) -> int:
        model = build_tiny_base(a.out, TinyBaseConfig(a.seed, a.steps, a.task_rows, a.threads, a.shape), a.progress)
        print(model)
        return 0

    return run_reporting_errors(run, args)


if __name__ == "__main__":
    raise SystemExit(main())
