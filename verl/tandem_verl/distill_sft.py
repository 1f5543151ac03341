"""Distillation SFT on verl 0.9.1's own SFT trainer: a student fine-tuned on a teacher's traces, an HF model dir out.

    bash verl/run_distill_sft.sh --traces T.jsonl --student DIR --out OUT --steps N \
        [--max-length L] [--lr X] [--batch-size B] [--long drop|cut] [--device cpu|cuda] [key=value ...]

The traces become verl's `messages` parquet (`tandem_verl.sft_data`, long traces counted);
then `torchrun -m verl.trainer.sft_trainer` trains with the overrides below plus any
`key=value` given, checkpointing into OUT (`global_step_N/`, `latest_checkpointed_iteration.txt`)
with a full HF model in `OUT/global_step_N/huggingface`, the one path printed last. A rerun on
the same OUT resumes from verl's latest checkpoint (`trainer.resume_mode=auto`); one whose
last checkpoint is step N already just prints it.

verl builds that HF model with `torch_dtype=bfloat16` hard-coded, so its config.json says
bfloat16 whatever the weights are; `set_dtype` writes the student's own dtype back, so the
distilled student loads as the student did. On CPU the run is float32 throughout (verl's
FSDP mixes to bf16 unless `engine.mixed_precision` says otherwise) on verl's CPU platform
(`tandem_verl.cpu_platform`), and `check_cpu` refuses overrides that undo what CPU needs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tandem.errors import TandemError
from tandem_verl import sft_data

ENABLE_THINKING = False  # as tandem_eval's chat prompt renders the question (tandem_eval/core/prompts.py)
LATEST = "latest_checkpointed_iteration.txt"  # verl's checkpoint handler writes it
FP32 = "{param_dtype:fp32,reduce_dtype:fp32,buffer_dtype:fp32}"
CPU_ENV = {"VERL_PLATFORM": "cpu", "VERL_ENGINE_DEVICE": "cuda", "CUDA_VISIBLE_DEVICES": ""}
# What a CPU run needs (verl/cpu_overrides.sh says why for the PPO actor; the SFT engine is the same FSDP engine).
CPU_REQUIRED = {
    "trainer.device": "cpu", "engine.strategy": "fsdp2", "model.use_remove_padding": "False",
    "data.pad_mode": "no_padding", "data.use_dynamic_bsz": "False", "engine.use_torch_compile": "False",
    "+model.override_config.attn_implementation": "sdpa", "engine.model_dtype": "fp32", "engine.dtype": "float32",
    "++engine.mixed_precision": FP32, "model.enable_gradient_checkpointing": "False", "data.num_workers": "0",
}


def hf_dir(out: Path, step: int) -> Path:
    return out / f"global_step_{step}" / "huggingface"


def latest_step(out: Path) -> int:
    path = out / LATEST
    return int(path.read_text().strip()) if path.is_file() else 0


def overrides(args, data: Path, truncation: str) -> list[str]:
    """verl's SFT config for this run (before the user's own `key=value` overrides)."""
    keys = {
        "data.train_files": str(data), "data.messages_key": sft_data.MESSAGES_KEY,
        "data.train_batch_size": str(args.batch_size), "data.micro_batch_size_per_gpu": str(args.micro_batch_size),
        "data.max_length": str(args.max_length), "data.truncation": truncation,
        "data.max_token_len_per_gpu": str(max(8192, args.max_length)), "data.pad_mode": "no_padding",
        "data.enable_thinking_default": str(ENABLE_THINKING).lower(), "model.path": str(args.student),
        "optim.lr": str(args.lr), "trainer.total_training_steps": str(args.steps),
        "trainer.total_epochs": str(args.steps),  # an upper bound: every epoch has >= 1 step (sft_data.require_rows)
        "trainer.save_freq": str(args.save_every or -1), "trainer.max_ckpt_to_keep": "1",
        "trainer.default_local_dir": str(args.out), "trainer.resume_mode": "auto", "trainer.logger": "[console]",
        "trainer.n_gpus_per_node": str(args.nproc), "trainer.project_name": "tandem-distill",
        "trainer.experiment_name": args.out.name, "checkpoint.save_contents": "[model,optimizer,extra,hf_model]",
    }
    if args.device == "cpu":
        keys.update(CPU_REQUIRED)
    return [f"{k}={v}" for k, v in keys.items()]


def check_cpu(final: list[str]) -> None:
    """Refuse, in one line, a CPU run whose overrides undo a setting CPU needs (the last `key=` wins)."""
    values = {}
    for item in final:
        key, _, value = item.partition("=")
        values[key.lstrip("+")] = value
    for key, want in CPU_REQUIRED.items():
        got = values.get(key.lstrip("+"))
        if got != want:
            raise TandemError(f"{key}={got}: a CPU run of verl's SFT trainer needs {key.lstrip('+')}={want}; "
                              "drop that override or run with --device cuda")


def set_dtype(model_dir: Path, student: Path) -> str:
    """Write the student's dtype into the HF model's config.json (see the module docstring); returns it."""
    want = json.loads((student / "config.json").read_text())
    dtype = want.get("dtype") or want.get("torch_dtype") or "float32"
    path = model_dir / "config.json"
    config = json.loads(path.read_text())
    config.update({k: dtype for k in ("dtype", "torch_dtype") if k in config} or {"dtype": dtype})
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")
    return dtype


def train(args, extra: list[str]) -> Path:
    """Prepare the data, run verl's SFT trainer (resuming), fix the dtype; returns the HF model dir."""
    done = hf_dir(args.out, args.steps)
    if latest_step(args.out) >= args.steps and (done / "config.json").is_file():
        print(f"distill sft: {args.out} already holds step {args.steps}")
        set_dtype(done, args.student)
        return done
    data = args.out / "data" / "train.parquet"
    rows = sft_data.prepare(args.traces, str(args.student), data, args.max_length, args.long, args.batch_size,
                            {"enable_thinking": ENABLE_THINKING})
    print(rows.note(args.max_length), flush=True)
    final = overrides(args, data, sft_data.TRUNCATION[args.long]) + extra
    env = dict(os.environ)
    if args.device == "cpu":
        check_cpu(final)
        env.update(CPU_ENV)
        mods = [m for m in env.get("VERL_USE_EXTERNAL_MODULES", "").split(",") if m]
        env["VERL_USE_EXTERNAL_MODULES"] = ",".join(dict.fromkeys([*mods, "tandem_verl.cpu_platform"]))
    torchrun = shutil.which("torchrun", path=str(Path(sys.executable).parent)) or "torchrun"
    cmd = [torchrun, "--standalone", f"--nproc_per_node={args.nproc}", "-m", "verl.trainer.sft_trainer", *final]
    rc = subprocess.run(cmd, env=env).returncode
    if rc != 0:
        raise TandemError(f"verl's SFT trainer exited with status {rc}; its log is above, and a rerun on {args.out} "
                          "resumes from its last checkpoint")
    if not (done / "config.json").is_file():
        raise TandemError(f"{done}: verl wrote no HF model there; keep hf_model in checkpoint.save_contents")
    set_dtype(done, args.student)
    return done


def parse(argv: list[str] | None) -> tuple[argparse.Namespace, list[str]]:
    ap = argparse.ArgumentParser(prog="run_distill_sft.sh", description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=Path, required=True, help="JSONL with prompt (the question) and response")
    ap.add_argument("--student", type=Path, required=True, help="the student's HF model dir")
    ap.add_argument("--out", type=Path, required=True, help="verl's checkpoint dir (a rerun resumes)")
    ap.add_argument("--steps", type=int, required=True, help="optimizer steps")
    ap.add_argument("--max-length", type=int, default=4096, help="tokens per chat (default: %(default)s)")
    ap.add_argument("--long", choices=sft_data.LONG_RULES, default="drop",
                    help="a longer trace is dropped, or cut on the right (default: %(default)s); counted either way")
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--batch-size", type=int, default=8, help="rows per optimizer step (default: %(default)s)")
    ap.add_argument("--micro-batch-size", type=int, default=1, help="rows per forward per GPU (default: %(default)s)")
    ap.add_argument("--save-every", type=int, default=0, help="checkpoint every N steps (0 = at the end only)")
    ap.add_argument("--nproc", type=int, default=1, help="processes (GPUs) on this node (default: %(default)s)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default=None, help="default: cuda if torch sees one")
    args, extra = ap.parse_known_args(argv)
    bad = [e for e in extra if "=" not in e or e.startswith("-")]
    if bad:
        ap.error(f"unknown argument {bad[0]!r}; verl overrides are key=value")
    if args.steps < 1 or args.batch_size < 1 or args.micro_batch_size < 1 or args.nproc < 1:
        ap.error("--steps, --batch-size, --micro-batch-size and --nproc must be >= 1")
    if not (args.student / "config.json").is_file():
        ap.error(f"--student {args.student}: no config.json there; pass an HF model dir")
    if args.device is None:
        import torch

        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    args.out, args.student, args.traces = args.out.resolve(), args.student.resolve(), args.traces.resolve()
    return args, extra


def main(argv: list[str] | None = None) -> int:
    args, extra = parse(argv)
    try:
        model = train(args, extra)
    except TandemError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(model)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
