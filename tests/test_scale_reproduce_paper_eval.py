"""scripts/reproduce_paper_eval.sh with `--backend vllm` (vLLM's CPU build) on the tiny zoo: every step runs on
vLLM engines, and the report and table come out with the paper preset. Runs in the scale lane (skips without vLLM)
with one checkpoint, the base (each step is a process that starts its own engine, about a minute here); several
checkpoints and the kill-and-resume path are covered in the main suite on the reference engine
(tests/test_reproduce_paper_eval.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed; the scale lane (bash scripts/test_scale.sh) runs this")
pytestmark = pytest.mark.vllm

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    from tandem_app.zoo import TinyModelConfig, build_tiny

    root = tmp_path_factory.mktemp("zoo4k")
    cfg = TinyModelConfig(max_position_embeddings=4096)  # the paper's longest prompts fit
    return build_tiny(root / "s0", seed=0, cfg=cfg)


def test_reproduce_on_vllm(zoo, shared_data, tmp_path):
    out = tmp_path / "paper"
    env = {**os.environ, "PYTHON": sys.executable, "TANDEM_DATA_DIR": str(shared_data)}
    cmd = ["bash", str(REPO / "scripts" / "reproduce_paper_eval.sh"), "--out", str(out), "--checkpoint", f"base={zoo}",
           "--skip-default", "trl-released", "--backend", "vllm", "--max-problems", "1", "--n", "2",
           "--max-new-tokens", "8", "--resamples", "50", "--device", "cpu"]
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3000)
    assert res.returncode == 0, res.stderr[-3000:]
    table = json.loads((out / "table.json").read_text())
    assert table["preset"] == "paper" and list(table["checkpoints"]) == ["base"]
    for phase in ("solo", "handoff"):
        summary = json.loads((out / "runs" / "base" / phase / "summary.json").read_text())
        assert summary["config"]["backend"] == "vllm" and summary["config"]["preset"] == "paper"
        assert set(table["checkpoints"]["base"][phase]) == {"aime2024", "aime2025", "aime2026", "amc_23_25", "macro"}
    assert "**Table 2** (preset `paper`)" in (out / "report.md").read_text()
    assert set(table["checkpoints"]["base"]["prefix"]) == {"0.3", "0.5", "0.7"}
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=3000)
    # 4 benchmarks x (solo, handoff, prefix transfer), and the legibility step
    assert again.returncode == 0 and again.stderr.count("already done") == 13
