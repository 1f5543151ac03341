"""scripts/reproduce_paper_eval.sh end to end on the tiny zoo (reference engine, a few problems): the report and
table, a kill and a resume that regenerates nothing finished, and the bad inputs it refuses before any work."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "reproduce_paper_eval.sh"
SMALL = ["--backend", "engine", "--max-problems", "1", "--n", "2", "--max-new-tokens", "8"]


@pytest.fixture(scope="module")
def zoo(tmp_path_factory):
    """Two tiny models whose context holds the paper's longest prompts (AIME in the tiny tokenizer: ~1,500 tokens)."""
    from tandem_app.zoo import TinyModelConfig, build_tiny

    root = tmp_path_factory.mktemp("zoo4k")
    cfg = TinyModelConfig(max_position_embeddings=4096)
    return build_tiny(root / "s0", seed=0, cfg=cfg), build_tiny(root / "s1", seed=1, cfg=cfg)


def _env(shared_data: Path) -> dict:
    return {**os.environ, "PYTHON": sys.executable, "TANDEM_DATA_DIR": str(shared_data), "OMP_NUM_THREADS": "1",
            "TOKENIZERS_PARALLELISM": "false"}


def _cmd(out: Path, zoo, *extra: str) -> list[str]:
    s0, s1 = zoo
    return ["bash", str(SCRIPT), "--out", str(out), "--checkpoint", f"base={s0}", "--checkpoint",
            f"trl-released={s1}", *SMALL, "--resamples", "50", *extra]


def test_killed_run_resumes_and_writes_report_and_table(zoo, shared_data, tmp_path):
    out = tmp_path / "paper"
    env = _env(shared_data)
    first = out / "runs" / "base" / "solo" / "aime2024.samples.jsonl"
    done_mark = first.with_name("aime2024.summary.json")  # written after the samples: the benchmark is whole
    proc = subprocess.Popen(_cmd(out, zoo), env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.time() + 600
    while not done_mark.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGKILL)  # the whole run, mid-way through the base's solo eval
    proc.wait()
    assert first.exists() and not (out / "report.md").exists()
    before = first.read_bytes()

    done = subprocess.run(_cmd(out, zoo), env=env, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "aime2024: already done with this config, skipped" in done.stderr  # not generated again
    assert first.read_bytes() == before

    table = json.loads((out / "table.json").read_text())
    assert table["preset"] == "paper" and list(table["checkpoints"]) == ["base", "trl-released"]
    for row in table["checkpoints"].values():
        for phase in ("solo", "handoff"):
            assert set(row[phase]) == {"aime2024", "aime2025", "aime2026", "amc_23_25", "macro"}
            assert set(row[phase]["macro"]) == {"pass@1", "pass@2"}
        assert row["legibility"]["n_scored"] > 0
    assert table["checkpoints"]["base"]["drift"]["js_bits"] == 0.0  # the base against itself
    for row in table["checkpoints"].values():  # which part of the handoff is the junior's, with no extra flag
        assert set(row["prefix"]) == {"0.3", "0.5", "0.7"} and "macro" in row["handoff_no_leak"]
        assert row["rates"]["solo"]["samples"] == row["rates"]["handoff"]["samples"] == 8
        assert 0.0 <= row["rates"]["handoff"]["hit_budget_rate"] <= 1.0
    handoff = json.loads((out / "runs" / "base" / "handoff" / "aime2024.summary.json").read_text())
    assert handoff["answer_visible"]["unknown"] == 0 and "leak_controlled" in handoff
    assert (out / "runs" / "base" / "handoff" / "aime2024.prefix.jsonl").is_file()
    report = (out / "report.md").read_text()
    assert "**Table 2** (preset `paper`)" in report and "| trl-released |" in report
    assert "A reduced run" in report and (out / "figures" / "passk.png").is_file()
    assert (out / "figures" / "passk.svg").is_file()
    assert "**Which part is the junior's**" in report and (out / "figures" / "transfer.png").is_file()

    again = subprocess.run(_cmd(out, zoo), env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and again.stderr.count("already done") >= 8  # every benchmark of both phases


def _refused(cmd: list[str], env: dict) -> str:
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    return lines[0]


def test_bad_input_is_one_line_and_touches_nothing(zoo, shared_data, tmp_path):
    env, s0 = _env(shared_data), zoo[0]
    out = tmp_path / "bad"
    line = _refused(["bash", str(SCRIPT), "--out", str(out), "--checkpoint", f"a={s0}", "--checkpoint", f"a={s0}"],
                    env)
    assert "label 'a' given twice" in line
    line = _refused(["bash", str(SCRIPT), "--out", str(out), "--checkpoint", "a=./no/such/dir"], env)
    assert "neither a local directory nor a hub id" in line
    line = _refused(["bash", str(SCRIPT), "--out", str(out), "--checkpoint", f"a={s0}", "--prefix-fractions", "0.5",
                     "1.5"], env)
    assert "--prefix-fractions: 1.5 is outside (0, 1)" in line
    assert not out.exists()

    other = out / "runs" / "base" / "solo"
    other.mkdir(parents=True)
    (other / "summary.json").write_text(json.dumps({"preset": "ours", "config": {"preset": "ours"}}))
    line = _refused(_cmd(out, zoo), env)
    assert "made with the 'ours' eval preset" in line
    assert sorted(p.name for p in out.rglob("*") if p.is_file()) == ["summary.json"]  # nothing written
