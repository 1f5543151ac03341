"""The demo's `demo_config.json` records what its phases ran, and rebuilds each phase's config exactly.

Issue 59: the record held the default task in its `sft` and `train` sections while the runs used the
quick task. Here the pipeline runs with every phase stubbed (no model is built or trained): each phase's
config is captured as the pipeline hands it over, and the config rebuilt from the record must equal it.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tandem.io.config_files import config_to_dict
from tandem.io.strict import build
from tandem_app.experiments import demo
from tandem_app.experiments.demo import METHODS, QUICK_TASK, DemoConfig, demo_config, sft_config, train_config


def _run_with_phases_stubbed(cfg: DemoConfig, out: Path, monkeypatch) -> dict:
    """`run_demo` with every phase replaced by one that records the config it was given."""
    ran: dict = {}

    class Trainer:
        def __init__(self, tc, progress=True):
            ran[tc.method] = tc

        def train(self, resume=False):
            return {}

    monkeypatch.setattr("tandem_app.zoo.build_tiny", lambda *a, **k: None)
    monkeypatch.setattr(demo, "run_sft", lambda sft, **k: ran.setdefault("sft", sft))
    monkeypatch.setattr(demo, "can_run_side_by_side", lambda todo: False)
    monkeypatch.setattr(demo, "GRPOTrainer", Trainer)
    monkeypatch.setattr(demo, "evaluate_all", lambda *a, **k: {})
    monkeypatch.setattr(demo, "write_report", lambda out, timings: out / "report.md")
    demo.run_demo(cfg, out, progress=False)
    return ran


@pytest.mark.parametrize("quick", [True, False], ids=["quick", "full"])
def test_each_phase_rebuilt_from_the_record_is_the_config_that_ran(quick, tmp_path, monkeypatch, capsys):
    out = tmp_path / "demo"
    cfg = demo_config(quick=quick, seed=3)
    ran = _run_with_phases_stubbed(cfg, out, monkeypatch)
    record = json.loads((out / "demo_config.json").read_text())
    again = build(DemoConfig, record)
    assert sft_config(again, out) == ran["sft"]
    for method in METHODS:
        assert train_config(again, out, method) == ran[method]
    assert record["sft"]["task"] == record["train"]["task"] == record["task"] == config_to_dict(cfg.task)


def test_the_quick_record_names_the_quick_task_in_every_phase(tmp_path, monkeypatch, capsys):
    out = tmp_path / "demo"
    ran = _run_with_phases_stubbed(demo_config(quick=True), out, monkeypatch)
    record = json.loads((out / "demo_config.json").read_text())
    assert ran["sft"].task == ran["tandem"].task == ran["grpo"].task == QUICK_TASK
    assert record["sft"]["task"] == record["train"]["task"] == config_to_dict(QUICK_TASK)
    assert record["sft"]["out"] == str(out / "sft") and record["train"]["model"] == str(out / "sft" / "model")


def test_a_rerun_reads_its_own_record_as_its_own_run(tmp_path, monkeypatch, capsys):
    """The record marks the folder as the demo's: a rerun continues it, an unrelated folder is refused."""
    out = tmp_path / "demo"
    cfg = replace(demo_config(quick=True), seed=1)
    _run_with_phases_stubbed(cfg, out, monkeypatch)
    assert _run_with_phases_stubbed(cfg, out, monkeypatch)["sft"] == sft_config(cfg, out)
