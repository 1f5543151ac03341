"""Distillation SFT on verl 0.9.1's own SFT trainer (`verl/run_distill_sft.sh`), on the scale lane's tiny model.

The run itself (2 steps, then a rerun to 3 that resumes from verl's checkpoint) is the
scale lane's: it starts torchrun on verl's CPU platform. The data and CPU-config checks are
pure and run wherever verl is installed.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verl", reason="verl 0.9.1 is not installed")

from transformers import AutoTokenizer  # noqa: E402

from tandem.errors import TandemError  # noqa: E402
from tandem_verl import distill_sft, sft_data  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
LANE = os.environ.get("TANDEM_REQUIRE_SCALE") == "1"


def write_traces(path: Path, task: Path, long: int = 1) -> Path:
    rows = [json.loads(line) for line in task.read_text().splitlines()[:12]]
    with path.open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({"prompt": r["problem"], "response": f"Count it up. \\boxed{{{r['answer']}}}"}) + "\n")
        for _ in range(long):
            f.write(json.dumps({"prompt": "Say a lot.", "response": "word " * 300}) + "\n")
    return path


def test_a_trace_longer_than_max_length_is_counted_then_dropped_or_left_for_verl_to_cut(scale_senior, tmp_path):
    traces = sft_data.read_traces(write_traces(tmp_path / "t.jsonl", scale_senior.parent / "task_train.jsonl", long=2))
    tok = AutoTokenizer.from_pretrained(scale_senior)
    dropped = sft_data.build_rows(tok, traces, 96, "drop", {"enable_thinking": False})
    cut = sft_data.build_rows(tok, traces, 96, "cut", {"enable_thinking": False})
    assert (len(dropped.rows), dropped.long, len(cut.rows), cut.long) == (12, 2, 14, 2)
    assert dropped.note(96).startswith("sft data: 2 of 14 traces are longer than max_length 96 tokens: dropped")
    assert "cut on the right by verl" in cut.note(96)
    with pytest.raises(TandemError, match="--batch-size 16"):
        sft_data.require_rows(dropped, 16, 96)


def test_a_bad_trace_line_is_one_error_naming_it(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"prompt": "q", "response": "r"}\n{"prompt": "q"}\n')
    with pytest.raises(TandemError, match=r"t.jsonl:2: a trace needs text fields 'prompt'"):
        sft_data.read_traces(path)


def test_a_cpu_run_refuses_overrides_that_undo_what_cpu_needs(tmp_path):
    ns = type("A", (), dict(batch_size=4, micro_batch_size=2, max_length=64, student=tmp_path, lr=1e-3, steps=2,
                            save_every=0, out=tmp_path, nproc=1, device="cpu"))()
    final = distill_sft.overrides(ns, tmp_path / "d.parquet", "error")
    distill_sft.check_cpu(final)
    with pytest.raises(TandemError, match=r"^engine.strategy=fsdp: a CPU run of verl's SFT trainer needs "
                                          r"engine.strategy=fsdp2"):
        distill_sft.check_cpu([*final, "engine.strategy=fsdp"])


def launch(traces: Path, student: Path, out: Path, steps: int) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHON": sys.executable, "OMP_NUM_THREADS": "1", "WANDB_MODE": "disabled"}
    cmd = ["bash", str(REPO / "verl" / "run_distill_sft.sh"), "--traces", str(traces), "--student", str(student),
           "--out", str(out), "--steps", str(steps), "--max-length", "96", "--lr", "1e-3", "--batch-size", "4",
           "--micro-batch-size", "2", "--device", "cpu"]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(not LANE, reason="the scale lane runs verl's SFT trainer (scripts/test_scale.sh)")
def test_verls_sft_trainer_distils_resumes_and_leaves_an_hf_model_in_the_students_dtype(scale_senior, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    traces, student, out = write_traces(tmp_path / "t.jsonl", scale_senior.parent / "task_train.jsonl"), \
        scale_senior, tmp_path / "sft"
    first = launch(traces, student, out, 2)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert "sft data: 1 of 13 traces are longer than max_length 96 tokens: dropped" in first.stdout
    losses = [float(x) for x in re.findall(r"train/loss:([-\d.e]+)", first.stdout)]
    assert len(losses) == 2 and all(math.isfinite(x) for x in losses)
    assert first.stdout.strip().splitlines()[-1] == str(out / "global_step_2" / "huggingface")

    again = launch(traces, student, out, 3)  # resumes from step 2: one more step
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-3000:]
    assert re.findall(r"step:(\d+) - ", again.stdout) == ["3"]
    model_dir = Path(again.stdout.strip().splitlines()[-1])
    assert model_dir == out / "global_step_3" / "huggingface"
    assert json.loads((model_dir / "config.json").read_text())["dtype"] == "float32"  # the student's, not verl's bf16

    ids = AutoTokenizer.from_pretrained(model_dir)("Owen has 5 cards.", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        after = AutoModelForCausalLM.from_pretrained(model_dir, dtype="auto")
        before = AutoModelForCausalLM.from_pretrained(student, dtype="auto")
        assert next(after.parameters()).dtype == torch.float32
        assert not torch.allclose(after(ids).logits, before(ids).logits)
