"""The student's fine-tuning on the kept traces: the project's SFT, or verl 0.9.1's SFT trainer.

- `embedded` (default): `tandem_app.train.sft.run_sft` on the traces' examples (the plain
  question prompt -> the response, both in the student's tokens, loss on the response only),
  in `OUT/student` with its checkpoints, resume and lock; the student is `OUT/student/model`.
- `verl`: `bash verl/run_distill_sft.sh` (verl's own SFT trainer; it resumes from its last
  checkpoint on a rerun) on a JSONL of {prompt: the question as the user message, response:
  the trace's text} in `OUT/sft_traces.jsonl`; its last stdout line is the student's HF dir.
  verl renders the chat itself and closes every response with the template's end token;
  `--max-length` is the student's context, which the kept traces already fit.

With `sft_budget=tokens` the embedded SFT runs the fewest steps whose batches (drawn as the
SFT draws them) hold `sft_tokens` response tokens (`steps_for_tokens`): a terse teacher's
student then sees as many gradient tokens as a verbose one's, not about 30% fewer (issue 44).

`OUT/student_sft.json` records the student's directory, steps and gradient tokens once the
phase is done.
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
    from tandem.io.jsonl import write_json

    steps, tokens = sft_steps(cfg, rows)
    model = (_embedded(cfg, out, rows, steps, progress, trust_unverified) if cfg.sft_backend == "embedded"
             else _verl(cfg, out, rows, inputs))
    write_json(out / RECORD, {"model": model, "sft_backend": cfg.sft_backend, "n_examples": len(rows),
                              "sft_budget": cfg.sft_budget, "steps": steps, "gradient_tokens": tokens})
    return model


def steps_for_tokens(lengths: list[int], batch_size: int, seed: int, tokens: int) -> tuple[int, int]:
    """(steps, gradient tokens): the fewest SFT steps whose batches, drawn as the SFT draws them
    (`batch_indices`), hold at least `tokens` response tokens of lengths `lengths`; and what they hold."""
    from tandem_app.train.data import batch_indices

    if not lengths or not any(lengths):
        raise TandemError("sft_budget=tokens: the kept traces hold no response token to train on")
    step = total = 0
    while total < tokens:
        total += sum(lengths[i] for i in batch_indices(len(lengths), batch_size, seed, step))
        step += 1
    return step, total


def sft_steps(cfg, rows: list[dict]) -> tuple[int, int | None]:
    """(steps, gradient tokens) of the student's SFT under `cfg.sft_budget` (tokens None where not counted:
    verl's batches are its own)."""
    lengths = [len(r["student_response_ids"]) for r in rows]
    if cfg.sft_budget == "tokens":
        return steps_for_tokens(lengths, cfg.batch_size, cfg.seed, cfg.sft_tokens)
    if cfg.sft_backend != "embedded":
        return cfg.steps, None
    from tandem_app.train.data import batch_indices

    return cfg.steps, sum(lengths[i] for s in range(cfg.steps) for i in batch_indices(len(lengths), cfg.batch_size,
                                                                                        cfg.seed, s))


def _embedded(cfg, out: Path, rows: list[dict], steps: int, progress: bool, trust_unverified: bool) -> str:
    from tandem_app.train.sft import SFTConfig, run_sft

    sft = SFTConfig(model=cfg.student, out=str(out / "student"), seed=cfg.seed, steps=steps,
                    batch_size=cfg.batch_size, lr=cfg.lr, warmup_steps=cfg.warmup_steps,
                    min_lr_ratio=cfg.min_lr_ratio, save_every=cfg.save_every, log_every=max(1, steps // 10),
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
    from tandem.io.jsonl import write_jsonl

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
