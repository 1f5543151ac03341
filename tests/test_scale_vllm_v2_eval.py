"""The eval's vLLM backend on vLLM's V2 model runner gives the reference engine's tokens, masks and scores.

Runs in the V2 lane (`bash scripts/test_scale.sh --v2`) beside `test_scale_vllm_v2_engine.py`,
on its 2-layer pair, and skips where vLLM decodes tandem on V1 (the scale lane's
`test_scale_eval_backends.py` covers that). Greedy decoding in float32 on a few problems of
the synthetic task, graded by the real grader: `eval_solo.py` on both backends, and
`eval_step_handoff.py` on the reference engine and on vLLM's tandem engine (the two-engine
turn loop runs solo engines, which the solo run covers on V2; the scale lane runs that route on
V1). The backend pins both arms to the V2 runner (`$VLLM_USE_V2_MODEL_RUNNER=1`).
"""

from __future__ import annotations

import json
import os

import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed; the V2 lane (bash scripts/test_scale.sh --v2) runs this")
pytestmark = pytest.mark.vllm

from tandem_eval.MATH import eval_step_handoff, eval_solo  # noqa: E402
from vllm_source.model_runner import RUNNER_ENV  # noqa: E402
from test_scale_vllm_v2_engine import DEVICE, v2_junior, v2_senior  # noqa: E402,F401  (fixtures; skips on V1)

PROBLEMS = 4
FIELDS = ("response_ids", "text", "extracted_answer", "correct", "finish_reason")


@pytest.fixture(scope="module", autouse=True)
def in_process_engines():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        yield


@pytest.fixture(scope="module")
def benchmark(v2_senior, tmp_path_factory):
    """The first problems of the tiny base's test split, as a local benchmark file."""
    rows = (v2_senior.parent / "task_test.jsonl").read_text().splitlines()[:PROBLEMS]
    path = tmp_path_factory.mktemp("bench") / "task.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return path


def common(benchmark, out_dir) -> list[str]:
    # On a GPU each engine takes a small share: the eval's default (0.85) fails beside the memory
    # earlier engines of the process still hold.
    memory = ["--gpu-memory-utilization", "0.3"] if DEVICE == "cuda" else []
    return ["--benchmarks", str(benchmark), "--n", "1", "--temperature", "0", "--max-new-tokens", "32",
            "--instruction", "", "--dtype", "float32", "--out-dir", str(out_dir), *memory]


def samples(out_dir) -> list[dict]:
    return [json.loads(line) for line in (out_dir / "task.samples.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def solo_runs(v2_senior, benchmark, tmp_path_factory):
    out = {}
    for backend in ("engine", "vllm"):
        out_dir = tmp_path_factory.mktemp(f"solo-{backend}")
        assert eval_solo.main(["--model", str(v2_senior), "--backend", backend, *common(benchmark, out_dir)]) == 0
        out[backend] = samples(out_dir)
    return out


@pytest.fixture(scope="module")
def handoff_runs(v2_senior, v2_junior, benchmark, tmp_path_factory):
    out = {}
    routes = (("engine", ["--backend", "engine"]), ("tandem", ["--backend", "vllm", "--vllm-handoff", "tandem"]))
    for name, extra in routes:
        out_dir = tmp_path_factory.mktemp(f"handoff-{name}")
        argv = ["--senior", str(v2_senior), "--junior", str(v2_junior), *extra, *common(benchmark, out_dir)]
        assert eval_step_handoff.main(argv) == 0
        out[name] = samples(out_dir)
    return out


def pick(rows, fields) -> list[dict]:
    return [{f: r[f] for f in fields} for r in rows]


def test_v2_eval_solo_gives_the_reference_engines_tokens_texts_and_scores(solo_runs):
    assert pick(solo_runs["vllm"], FIELDS) == pick(solo_runs["engine"], FIELDS)
    assert os.environ[RUNNER_ENV] == "1"  # pinned by the eval's vLLM backend for every engine it starts


def test_v2_eval_handoff_gives_the_reference_engines_tokens_masks_and_scores(handoff_runs):
    fields = (*FIELDS, "authorship_mask", "num_handoffs")
    assert pick(handoff_runs["tandem"], fields) == pick(handoff_runs["engine"], fields)
    assert any(r["num_handoffs"] >= 1 for r in handoff_runs["engine"]), "the junior never wrote: nothing compared"
