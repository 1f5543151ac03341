"""The embedded trainers' metrics log: flat or verl rows read alike, resumed in either form, and the sinks."""

from __future__ import annotations

import json
import sys

import pytest

from tandem.errors import TandemError
from tandem.io.metric_log import read_metrics
from tandem_app.train.metrics import MetricsLogger
from tandem_app.train.sft import SFTConfig
from tandem_app.train.train_config import TrainConfig

ROWS = [(0, {"val_acc": 0.25}), (1, {"reward_mean": 0.5, "senior_token_fraction": 0.75}),
        (2, {"reward_mean": 0.625, "val_acc": 0.5}), (3, {"reward_mean": 0.75})]


def _write(path, form, rows=ROWS, **kw):
    logger = MetricsLogger(path, console=False, form=form, **kw)
    for step, m in rows:
        logger.log(step, m)
    logger.close()


def _lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_verl_form_log_holds_step_and_data_rows_read_as_the_flat_form(tmp_path):
    _write(tmp_path / "flat.jsonl", "flat")
    _write(tmp_path / "verl.jsonl", "verl")
    assert _lines(tmp_path / "flat.jsonl")[1] == {"step": 1, "reward_mean": 0.5, "senior_token_fraction": 0.75}
    assert _lines(tmp_path / "verl.jsonl")[1] == {"step": 1, "data": {"reward_mean": 0.5, "senior_token_fraction": 0.75}}
    assert read_metrics(tmp_path / "verl.jsonl") == read_metrics(tmp_path / "flat.jsonl") == ROWS


def test_tensors_are_logged_as_plain_numbers(tmp_path):
    torch = pytest.importorskip("torch")
    _write(tmp_path / "m.jsonl", "verl", rows=[(1, {"loss": torch.tensor(0.5), "n": 3})])
    assert _lines(tmp_path / "m.jsonl") == [{"step": 1, "data": {"loss": 0.5, "n": 3}}]


@pytest.mark.parametrize("form", ["flat", "verl"])
def test_a_resume_keeps_the_rows_up_to_its_step_and_drops_a_torn_tail(tmp_path, form, capsys):
    path = tmp_path / "metrics.jsonl"
    _write(path, form)
    with path.open("a") as f:
        f.write('{"step": 4, "da')  # a write the crash cut short
    logger = MetricsLogger(path, resume_step=2, console=False, form=form)
    assert logger.last_step == 2
    logger.log(3, {"reward_mean": 0.75})
    logger.close()
    assert f"{path}:5: dropped a torn last line" in capsys.readouterr().err
    assert read_metrics(path) == ROWS
    assert all(("data" in row) == (form == "verl") for row in _lines(path))


def test_a_resume_in_the_other_form_rewrites_the_kept_rows_in_it(tmp_path):
    path = tmp_path / "metrics.jsonl"
    _write(path, "flat")
    logger = MetricsLogger(path, resume_step=3, console=False, form="verl")
    logger.close()
    assert all(set(row) == {"step", "data"} for row in _lines(path)) and read_metrics(path) == ROWS


def test_a_bad_row_before_the_last_is_an_error_naming_it(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1, "a": 1}\nnot json\n{"step": 2, "a": 2}\n')
    with pytest.raises(TandemError, match=r"metrics.jsonl:2: not a metrics row"):
        MetricsLogger(path, resume_step=2, console=False)


@pytest.mark.parametrize("cls", [TrainConfig, SFTConfig])
def test_an_unknown_metrics_format_is_refused(cls):
    with pytest.raises(TandemError, match=r"unknown metrics_format 'jsonl'; choose one of flat, verl$"):
        cls(model="m", out="o", metrics_format="jsonl")


def test_the_tensorboard_sink_writes_one_scalar_per_metric_and_step(tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    _write(tmp_path / "metrics.jsonl", "flat", tensorboard=str(tmp_path / "tb"))
    events = EventAccumulator(str(tmp_path / "tb"))
    events.Reload()
    assert sorted(events.Tags()["scalars"]) == ["reward_mean", "senior_token_fraction", "val_acc"]
    assert [(e.step, e.value) for e in events.Scalars("reward_mean")] == [(1, 0.5), (2, 0.625), (3, 0.75)]


def test_the_tensorboard_sink_logs_through_summary_writer(tmp_path, monkeypatch):
    calls = []

    class FakeWriter:
        def __init__(self, log_dir, purge_step=None):
            calls.append(("init", log_dir, purge_step))

        def add_scalar(self, name, value, global_step):
            calls.append((name, value, global_step))

        def flush(self):
            pass

        def close(self):
            calls.append(("close",))

    fake = type(sys)("torch.utils.tensorboard")
    fake.SummaryWriter = FakeWriter
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", fake)
    path = tmp_path / "metrics.jsonl"
    _write(path, "flat", rows=ROWS[:2])
    logger = MetricsLogger(path, resume_step=1, console=False, tensorboard="TB")
    logger.log(2, {"reward_mean": 0.625, "note": "text is not a scalar", "stopped": True})
    logger.close()
    assert calls == [("init", "TB", 2), ("reward_mean", 0.625, 2), ("close",)]


def test_tensorboard_missing_is_one_line_naming_the_install(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # import fails as when not installed
    with pytest.raises(TandemError) as e:
        MetricsLogger(tmp_path / "metrics.jsonl", console=False, tensorboard=str(tmp_path / "tb"))
    assert str(e.value) == ("tensorboard logging is on but tensorboard is not installed; `pip install tensorboard` "
                            "or set tensorboard=false")


def test_the_logging_keys_default_to_todays_files(tmp_path):
    from tandem_app.train.log_sinks import logger_settings

    cfg = TrainConfig(model="m", out=str(tmp_path))
    assert logger_settings(cfg, tmp_path, "run") == {"form": "flat", "wandb": None, "tensorboard": None}
    on = TrainConfig(model="m", out=str(tmp_path), tensorboard=True, metrics_format="verl")
    assert logger_settings(on, tmp_path, "run")["tensorboard"] == str(tmp_path / "tensorboard")
    assert logger_settings(on, tmp_path, "run")["form"] == "verl"
