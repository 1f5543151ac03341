"""The demo trains TRL and GRPO side by side, one process each, only when each has a free core and
one thread; the runs are the same runs as one after the other, and a child's error reaches the user."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tandem.errors import TandemError
from tandem_app.experiments import method_runs
from tandem_app.experiments.demo import METHODS, demo_config, train_config
from tandem_app.train.grpo_trainer import GRPOTrainer

TIMED = ("time_step", "elapsed_s", "time_rollout", "time_update")  # wall-clock fields differ run to run


def _configs(quick_demo, out, steps=2):
    """Both methods from the quick demo's base, a short run each, written under OUT."""
    cfg = demo_config(quick=True)
    return [replace(train_config(cfg, quick_demo, m), out=str(out / m), steps=steps, val_every=0, save_every=steps)
            for m in METHODS]


def _rows(run_dir):
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith("time") and k not in TIMED} for r in rows]


def test_side_by_side_runs_are_the_runs_one_after_the_other(quick_demo, tmp_path):
    together, apart = _configs(quick_demo, tmp_path / "together"), _configs(quick_demo, tmp_path / "apart")
    method_runs.train_side_by_side(together, progress=False)
    for tc in apart:
        GRPOTrainer(tc, progress=False).train()
    for a, b in zip(together, apart, strict=True):
        assert _rows(tmp_path / "together" / a.method) == _rows(tmp_path / "apart" / b.method), a.method
        assert (tmp_path / "together" / a.method / "model" / "model.safetensors").read_bytes() == \
            (tmp_path / "apart" / b.method / "model" / "model.safetensors").read_bytes()


def test_a_childs_error_is_raised_in_the_demo_with_its_own_words(quick_demo, tmp_path):
    good, bad = _configs(quick_demo, tmp_path)
    bad = replace(bad, model=str(tmp_path / "no-such-model"))
    with pytest.raises(Exception) as err:
        method_runs.train_side_by_side([good, bad], progress=False)
    assert "no-such-model" in str(err.value)
    assert isinstance(err.value, (TandemError, OSError, ValueError)), type(err.value)
    assert (tmp_path / "tandem" / "summary.json").is_file()  # the other run finished and is kept


def test_side_by_side_only_with_a_core_and_one_thread_per_run(quick_demo, tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    both = _configs(quick_demo, tmp_path)
    monkeypatch.setattr(method_runs, "cores", lambda: 2)
    monkeypatch.setattr(method_runs, "free_cores", lambda: 1.0)  # an idle 2-core machine: this process alone
    assert method_runs.can_run_side_by_side(both)  # the tiny models take one thread each
    assert not method_runs.can_run_side_by_side(both[:1])  # nothing to run beside
    assert not method_runs.can_run_side_by_side([replace(tc, threads=2) for tc in both])  # the user asked for more
    monkeypatch.setattr(method_runs, "free_cores", lambda: 0.2)  # another job holds the other core
    assert not method_runs.can_run_side_by_side(both)
    monkeypatch.setattr(method_runs, "cores", lambda: 1)
    monkeypatch.setattr(method_runs, "free_cores", lambda: 1.0)
    assert not method_runs.can_run_side_by_side(both)


KILLED_PARENT = """
import sys
from dataclasses import replace
from pathlib import Path
from tandem_app.experiments import method_runs
from tandem_app.experiments.demo import METHODS, demo_config, train_config
demo, out = Path(sys.argv[1]), Path(sys.argv[2])
cfg = demo_config(quick=True)
method_runs.train_side_by_side([replace(train_config(cfg, demo, m), out=str(out / m), steps=500, val_every=0,
                                        save_every=500) for m in METHODS], progress=False)
"""


def test_a_killed_demo_leaves_no_run_training_on(quick_demo, tmp_path):
    """SIGKILL reaches only the parent: each child sees it gone and ends, so no orphan holds a run's lock."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from tandem.io.run_lock import LOCK_NAME, _alive

    parent = subprocess.Popen([sys.executable, "-c", KILLED_PARENT, str(quick_demo), str(tmp_path)])
    locks = [tmp_path / m / LOCK_NAME for m in METHODS]
    deadline = time.time() + 120
    while not all(p.is_file() for p in locks) and time.time() < deadline and parent.poll() is None:
        time.sleep(0.2)
    children = [json.loads(p.read_text())["pid"] for p in locks]  # each run's lock names its child
    assert all(_alive(pid) for pid in children)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait()
    deadline = time.time() + 30
    while any(_alive(pid) for pid in children) and time.time() < deadline:
        time.sleep(0.2)
    assert not any(_alive(pid) for pid in children), children
