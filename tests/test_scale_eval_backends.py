"""The eval scripts give the same tokens, masks and scores on `--backend engine` and `--backend vllm`.

Runs in the scale lane (vLLM's CPU build) and skips where vLLM is not installed. Greedy
decoding in float32 on the scale lane's tiny bases (a senior and a junior of other
weights) and a few problems of the synthetic task, graded by the real grader:
`eval_solo.py` on both backends, and `eval_step_handoff.py` on the reference engine,
on vLLM's tandem engine and on vLLM's two-engine turn loop. vLLM engines run in-process.
"""

from __future__ import annotations

import json

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed; the scale lane (bash scripts/test_scale.sh) runs this")
pytestmark = pytest.mark.vllm

from tandem_eval.MATH import eval_step_handoff, eval_solo  # noqa: E402

PROBLEMS = 6
FIELDS = ("response_ids", "text", "extracted_answer", "correct", "finish_reason")


@pytest.fixture(scope="module", autouse=True)
def in_process_engines():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        yield


@pytest.fixture(scope="module")
def benchmark(scale_senior, tmp_path_factory):
    """The first problems of the tiny base's test split, as a local benchmark file."""
    rows = (scale_senior.parent / "task_test.jsonl").read_text().splitlines()[:PROBLEMS]
    path = tmp_path_factory.mktemp("bench") / "task.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return path


def common(benchmark, out_dir) -> list[str]:
    return ["--benchmarks", str(benchmark), "--n", "1", "--temperature", "0", "--max-new-tokens", "48",
            "--instruction", "", "--dtype", "float32", "--out-dir", str(out_dir)]


def samples(out_dir) -> list[dict]:
    return [json.loads(line) for line in (out_dir / "task.samples.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def solo_runs(scale_senior, benchmark, tmp_path_factory):
    out = {}
    for backend in ("engine", "vllm"):
        out_dir = tmp_path_factory.mktemp(f"solo-{backend}")
        assert eval_solo.main(["--model", str(scale_senior), "--backend", backend, *common(benchmark, out_dir)]) == 0
        out[backend] = samples(out_dir)
    return out


@pytest.fixture(scope="module")
def handoff_runs(scale_senior, scale_junior, benchmark, tmp_path_factory):
    out = {}
    routes = (("engine", ["--backend", "engine"]), ("tandem", ["--backend", "vllm", "--vllm-handoff", "tandem"]),
              ("two-engine", ["--backend", "vllm"]))  # two-engine is the default route
    for name, extra in routes:
        out_dir = tmp_path_factory.mktemp(f"handoff-{name}")
        argv = ["--senior", str(scale_senior), "--junior", str(scale_junior), *extra, *common(benchmark, out_dir)]
        assert eval_step_handoff.main(argv) == 0
        out[name] = samples(out_dir)
    return out


def pick(rows, fields) -> list[dict]:
    return [{f: r[f] for f in fields} for r in rows]


def test_eval_solo_gives_the_same_tokens_texts_and_scores_on_engine_and_vllm(solo_runs):
    assert pick(solo_runs["vllm"], FIELDS) == pick(solo_runs["engine"], FIELDS)
    assert any(r["correct"] for r in solo_runs["engine"]), "some answers must be right for the scores to mean much"


@pytest.mark.parametrize("route", ["tandem", "two-engine"])
def test_eval_handoff_gives_the_same_tokens_masks_and_scores_on_engine_and_vllm(handoff_runs, route):
    fields = (*FIELDS, "authorship_mask", "num_handoffs")
    assert pick(handoff_runs[route], fields) == pick(handoff_runs["engine"], fields)


def test_eval_handoff_really_hands_over(handoff_runs):
    assert all(r["num_handoffs"] >= 1 for r in handoff_runs["engine"])
    assert all(r["authorship_mask"][0] == 1 for r in handoff_runs["engine"])  # the senior writes first
