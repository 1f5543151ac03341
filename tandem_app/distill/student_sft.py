"""The student's fine-tuning on the kept traces: the project's SFT, or verl 0.9.1's SFT trainer.

- `embedded` (default): `tandem_app.train.sft.run_sft` on the traces' examples (the plain
  question prompt -> the response, both in the student's tokens, loss on the response only),
  in `OUT/student` with its checkpoints, resume and lock; the student is `OUT/student/model`.
- `verl`: `bash verl/run_distill_sft.sh` (verl's own SFT trainer; it resumes from its last
  checkpoint on a rerun) on a JSONL of {prompt: the question as the user message, response:
  the trace's text} in `OUT/sft_traces.jsonl`; its last stdout line is the student's HF dir.
  verl renders the chat itself and closes every response with the template's end token;
  `--max-length` is the student's context, which the kept traces already fit.

`OUT/student_sft.json` records the student's directory once the phase is done.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tandem.errors import TandemError

RECORD = "student_sft.json"
VERL_SCRIPT = Path(__file__).resolve().parents[2] / "verl" / "run_distill_sft.sh"


def done(out: Path) -> str | None:
    """The fine-tuned student's directory when the phase is complete, else None."""
    path = out / RECORD
    return json.loads(path.read_text())["model"] if path.is_file() else None


def train(cfg, out: Path, rows: list[dict], inputs, progress: bool, trust_unverified: bool = False) -> str:
    """Fine-tune the student on `rows` (kept traces); record and return its directory."""
    from tandem.jsonl import write_json

    model = (_embedded(cfg, out, rows, progress, trust_unverified) if cfg.sft_backend == "embedded"
             else _verl(cfg, out, rows, inputs))
    write_json(out / RECORD, {"model": model, "sft_backend": cfg.sft_backend, "n_examples": len(rows)})
    return model


def _embedded(cfg, out: Path, rows: list[dict], progress: bool, trust_unverified: bool) -> str:
    from tandem_app.train.sft import SFTConfig, run_sft

    sft = SFTConfig(model=cfg.student, out=str(out / "student"), seed=cfg.seed, steps=cfg.steps,
                    batch_size=cfg.batch_size, lr=cfg.lr, warmup_steps=cfg.warmup_steps,
                    min_lr_ratio=cfg.min_lr_ratio, save_every=cfg.save_every, log_every=max(1, cfg.steps // 10),
                    device=cfg.device, threads=cfg.threads)
    examples = [(r["student_prompt_ids"], r["student_response_ids"]) for r in rows]
    summary = run_sft(sft, resume=Path(sft.out).exists(), progress=progress, examples=examples,
                      trust_unverified=trust_unverified)
    return summary["model"]


def verl_rows(rows: list[dict], inputs) -> list[dict]:
    """verl's input: the question as the user message, the response as the student trains on it (cut included)."""
    tok = inputs.student_tokenizer
    return [{"prompt": r["question"],
             "response": tok.decode(r["student_response_ids"], skip_special_tokens=True) if r["cut"] else r["response"]}
            for r in rows]


def _verl(cfg, out: Path, rows: list[dict], inputs) -> str:
    from tandem.jsonl import write_jsonl

    data = out / "sft_traces.jsonl"
    write_jsonl(data, verl_rows(rows, inputs))
    cmd = ["bash", str(VERL_SCRIPT), "--traces", str(data), "--student", cfg.student,
           "--out", str(out / "student-verl"), "--steps", str(cfg.steps), "--max-length", str(inputs.student_context),
           "--lr", str(cfg.lr), "--batch-size", str(cfg.batch_size), "--nproc", str(cfg.sft_nproc)]
    env = {**os.environ, "PYTHON": os.environ.get("PYTHON", sys.executable)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, env=env)
    last = ""
    for line in proc.stdout:  # shown as it comes; the last line names the model
        print(line, end="", flush=True)
        last = line.strip() or last
    if proc.wait() != 0:
        raise TandemError(f"verl/run_distill_sft.sh exited with status {proc.returncode} (its log is above); "
                          "a rerun resumes from its last checkpoint")
    if not (Path(last) / "config.json").is_file():
        raise TandemError(f"verl/run_distill_sft.sh printed {last!r} last, which is no HF model directory")
    return last
