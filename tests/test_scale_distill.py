"""`tandem-rlvr distill` on the scale path, on CPU: vLLM traces, verl's own SFT trainer, tandem_eval's eval.

The whole chain of `backend=vllm sft_backend=verl` on the scale lane's tiny bases
(`tests/conftest.py`): the senior is the teacher and writes a handful of traces on
tandem_eval's vLLM backend (vLLM's CPU build, engines in-process); the junior (same
vocabulary, other weights) is the student, fine-tuned on them for 3 steps by verl 0.9.1's
SFT trainer (`verl/run_distill_sft.sh`: torchrun on verl's CPU platform) and evaluated solo
on the vLLM backend before and after (8 problems x 2 samples). The problems are the toy task
in the version the tiny bases learned (`tiny_base.SMOKE_TASK`), so the teacher gets some right.
A rerun with --resume reuses every phase. Skips where vLLM or verl is not installed; the
scale lane (`bash scripts/test_scale.sh`) runs it, and fails on that skip.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import time
from dataclasses import asdict, replace

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed; the scale lane (bash scripts/test_scale.sh) runs this")
pytest.importorskip("verl", reason="verl 0.9.1 is not installed; the scale lane (bash scripts/test_scale.sh) runs this")
pytestmark = pytest.mark.vllm

from tandem_app.commands.cli import main  # noqa: E402
from tandem_app.train.tiny_base import SMOKE_TASK  # noqa: E402

STEPS, BATCH, BUDGET, N_EVAL, N_SAMPLES = 3, 4, 240, 8, 2
# 16 problems at most 48 tokens each; the budget keeps a handful (>= 5 traces, enough for one batch of 4).
SMALL = ["backend=vllm", "sft_backend=verl", "n_train_problems=16", "max_new_tokens=48", f"token_budget={BUDGET}",
         f"steps={STEPS}", f"batch_size={BATCH}", "lr=1e-3", f"n_eval_problems={N_EVAL}", f"n_samples={N_SAMPLES}",
         "eval_sampling.max_new_tokens=48", "threads=1"]
PHASES = {"traces", "eval_before", "sft", "eval_after"}


@pytest.fixture(scope="module")
def finished(scale_senior, scale_junior, tmp_path_factory):
    """One run of the chain: its folder, the vLLM engines it built (kind, model), what it printed, its seconds."""
    from tandem_backends.registry import REGISTRY

    tmp = tmp_path_factory.mktemp("distill-scale")
    config = tmp / "task.json"  # the task as the tiny bases learned it, as a GPU run would pass its own
    config.write_text(json.dumps({"task": {**asdict(SMOKE_TASK), "operations": list(SMOKE_TASK.operations)}}))
    out, built, log = tmp / "run", [], tmp / "printed.txt"
    real = REGISTRY["vllm"].build

    def spy(senior, *args, **kwargs):
        built.append(("vllm", str(senior)))
        return real(senior, *args, **kwargs)

    # a file, not a StringIO: vLLM silences C-level output through sys.stdout's file descriptor
    with pytest.MonkeyPatch.context() as mp, log.open("w") as f, contextlib.redirect_stdout(f):
        mp.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # engines in this process, freed with it
        mp.setenv("WANDB_MODE", "disabled")
        mp.setitem(REGISTRY, "vllm", replace(REGISTRY["vllm"], build=spy))
        t0 = time.time()
        rc = main(["distill", "--teacher", str(scale_senior), "--student", str(scale_junior), "--out", str(out),
                   "--config", str(config), "--no-progress", *SMALL])
        seconds = time.time() - t0
    printed = log.read_text()
    assert rc == 0, printed[-4000:]
    print(f"\ndistill on the scale path: {seconds:.0f} s")
    return out, built, printed, seconds


def test_the_summary_holds_the_paired_gain_of_a_student_distilled_by_verl(finished):
    out, _, printed, _ = finished
    s = json.loads((out / "summary.json").read_text())
    for key in ("accuracy_before", "accuracy_after"):
        assert 0 <= s[key] <= 1, key
    assert s["gain"] == pytest.approx(s["accuracy_after"] - s["accuracy_before"])
    assert s["gain_se"] is not None and s["gain_se"] >= 0
    got = (s["n_eval_problems"], s["n_samples"], s["sft_backend"], s["sft_steps"])
    assert got == (N_EVAL, N_SAMPLES, "verl", STEPS)
    rows = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    assert s["n_traces"] == len(rows) >= BATCH
    assert 0 < s["trace_tokens"] == sum(len(r["student_response_ids"]) for r in rows) <= BUDGET
    assert s["teacher_correct_fraction"] > 0, "the tiny senior gets some right: the traces carry real answers"
    assert set(s["seconds"]) == PHASES
    assert printed.strip().splitlines()[-1].startswith(f"distill: student solo accuracy {s['accuracy_before']:.3f}")


def test_the_traces_and_both_evaluations_ran_on_the_vllm_backend(finished, scale_senior, scale_junior):
    out, built, _, _ = finished
    s = json.loads((out / "summary.json").read_text())
    assert json.loads((out / "config.json").read_text())["backend"] == "vllm"
    assert built == [("vllm", str(scale_senior)), ("vllm", str(scale_junior)), ("vllm", s["student_after"])]


def test_verls_sft_trainer_took_the_steps_and_left_an_hf_student_that_loads(finished, scale_junior):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out, _, printed, _ = finished
    s = json.loads((out / "summary.json").read_text())
    assert s["student_after"] == str(out / "student-verl" / f"global_step_{STEPS}" / "huggingface")
    assert json.loads((out / "student_sft.json").read_text())["sft_backend"] == "verl"
    losses = [float(x) for x in re.findall(r"train/loss:([-\d.e]+)", printed)]
    assert len(losses) == STEPS and all(math.isfinite(x) for x in losses)
    ids = AutoTokenizer.from_pretrained(s["student_after"])("Owen has 5 cards.", return_tensors="pt")["input_ids"]
    with torch.no_grad():
        after = AutoModelForCausalLM.from_pretrained(s["student_after"], dtype="auto")
        before = AutoModelForCausalLM.from_pretrained(scale_junior, dtype="auto")
        assert next(after.parameters()).dtype == torch.float32
        assert not torch.allclose(after(ids).logits, before(ids).logits)


def test_a_resumed_rerun_reuses_every_phase_in_seconds(finished, monkeypatch, capsys):
    from tandem_app.distill import evaluation, student_sft, traces

    out, _, _, first = finished
    was = {name: (out / name).read_text() for name in ("summary.json", "timings.json")}
    for module, name in ((traces, "collect"), (student_sft, "train"), (evaluation, "evaluate_solo")):
        monkeypatch.setattr(module, name, lambda *a, **k: pytest.fail("a finished phase ran again"))
    t0 = time.time()
    assert main(["distill", "--out", str(out), "--resume", "--no-progress"]) == 0
    again = time.time() - t0
    assert {name: (out / name).read_text() for name in was} == was
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("distill: student solo accuracy")
    assert again < min(60.0, first / 3), f"the resumed rerun took {again:.0f} s (the run {first:.0f} s)"
