"""`scripts/bench_quick_demo.py`: its busy loops never outlive a run, and a row says what ran.

The demo itself is replaced by a stand-in that writes the demo's `timings.json` (the real
command is measured by hand; its numbers are in model_spec/PERFORMANCE.md).
"""

import importlib.util
import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("bench_quick_demo", REPO / "scripts" / "bench_quick_demo.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)


def _started_loops(monkeypatch) -> list:
    started, real_popen = [], subprocess.Popen

    def popen(*args, **kwargs):
        started.append(real_popen(*args, **kwargs))
        return started[-1]

    monkeypatch.setattr(bench.subprocess, "Popen", popen)
    monkeypatch.setattr(bench.time, "sleep", lambda s: None)
    return started


def _fake_demo(cmd, **kwargs):
    out = Path(cmd[cmd.index("--out") + 1])
    out.mkdir(parents=True)
    (out / "timings.json").write_text(json.dumps({"sft": 1.23, "eval": 0.5}))


def test_a_row_has_the_wall_time_phases_load_and_steal(monkeypatch):
    loops = _started_loops(monkeypatch)
    monkeypatch.setattr(bench.subprocess, "run", _fake_demo)
    row = bench.one_run(seed=0, busy=2)
    assert len(loops) == 2 and all(p.poll() is not None for p in loops)  # both loops killed
    assert row["phases_s"] == {"sft": 1.2, "eval": 0.5}
    assert row["wall_s"] >= 0 and row["load_avg_1m"] >= 0
    assert row["host_steal_s"] is None or row["host_steal_s"] >= 0


def test_the_busy_loops_are_killed_when_the_demo_fails(monkeypatch):
    loops = _started_loops(monkeypatch)

    def failing(cmd, **kwargs):
        raise subprocess.CalledProcessError(1, cmd)

    monkeypatch.setattr(bench.subprocess, "run", failing)
    with pytest.raises(subprocess.CalledProcessError):
        bench.one_run(seed=0, busy=1)
    assert len(loops) == 1 and loops[0].poll() is not None


def test_each_busy_loop_runs_in_its_own_session(monkeypatch):
    seen, real_popen = [], subprocess.Popen
    monkeypatch.setattr(bench.subprocess, "Popen", lambda *a, **kw: seen.append(kw) or real_popen(["true"]))
    monkeypatch.setattr(bench.time, "sleep", lambda s: None)
    monkeypatch.setattr(bench.subprocess, "run", _fake_demo)
    bench.one_run(seed=0, busy=2)
    assert [kw.get("start_new_session") for kw in seen] == [True, True]
