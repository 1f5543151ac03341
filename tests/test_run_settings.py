"""`RunSettings`: the device and logging keys both embedded trainers' configs inherit, declared once.

The keys stay flat (`device=cpu wandb=true threads=1`), each is refused in one line naming
it, and a run's `config.json` holds them and reads back as the same config (what --resume does).
`distill`, which has no metric sinks, inherits their device part (`DeviceSettings`) the same way.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from tandem.io.config_files import config_to_dict, load_config
from tandem.errors import TandemError
from tandem_app.distill.config import DistillConfig
from tandem_app.train.run_settings import DeviceSettings, RunSettings
from tandem_app.train.sft_config import SFTConfig
from tandem_app.train.train_config import TrainConfig

CONFIGS = {"train": TrainConfig, "sft": SFTConfig}


@pytest.mark.parametrize("where", sorted(CONFIGS))
def test_the_run_settings_are_declared_once_and_stay_flat_keys(where, tmp_path):
    cls = CONFIGS[where]
    shared = {f.name for f in dataclasses.fields(RunSettings)}
    assert issubclass(cls, RunSettings) and len(shared) == 9
    declared = {name for klass in cls.__mro__ if klass not in (RunSettings, DeviceSettings)
                for name in vars(klass).get("__annotations__", {})}
    assert not declared & shared  # each default in RunSettings only
    cfg = load_config(cls, None, ["model=m", f"out={tmp_path}", "device=cpu", "wandb=true", "threads=1"])
    assert (cfg.device, cfg.wandb, cfg.threads) == ("cpu", True, 1)
    saved = tmp_path / "config.json"  # as a run writes it, and as --resume reads it back
    saved.write_text(json.dumps(config_to_dict(cfg)))
    assert shared <= set(json.loads(saved.read_text())) and load_config(cls, saved) == cfg


@pytest.mark.parametrize("where", sorted(CONFIGS))
@pytest.mark.parametrize("override, message", [
    ("device=tpu", "device='tpu' is not a torch device"),
    ("threads=-1", "threads must be >= 0, got -1"),
    ("metrics_format=csv", "unknown metrics_format 'csv'"),
    ("keep_checkpoints=-1", "keep_checkpoints must be >= 0, got -1"),
])
def test_a_bad_run_setting_is_one_line_naming_its_key(where, override, message):
    with pytest.raises(TandemError, match=rf"^{where}: {message}"):
        load_config(CONFIGS[where], None, ["model=m", "out=o", override])


def test_the_run_settings_keep_their_place_among_the_keys():
    # RunSettings is a base after each config's own leading keys, so --help and config.json read as before
    for cls, before, after in ((TrainConfig, "engine_mode", "sampling"), (SFTConfig, "max_new_tokens", "task")):
        names = [f.name for f in dataclasses.fields(cls)]
        shared, start = [f.name for f in dataclasses.fields(RunSettings)], names.index("device")
        end = start + len(shared)
        assert names[start - 1] == before and names[start:end] == shared and names[end] == after


def test_distill_takes_the_device_settings_alone_in_their_place():
    shared = [f.name for f in dataclasses.fields(DeviceSettings)]
    assert issubclass(DistillConfig, DeviceSettings) and not issubclass(DistillConfig, RunSettings)
    declared = {name for klass in DistillConfig.__mro__ if klass is not DeviceSettings
                for name in vars(klass).get("__annotations__", {})}
    assert shared == ["device", "threads"] and not declared & set(shared)
    names = [f.name for f in dataclasses.fields(DistillConfig)]
    start = names.index("device")  # between the traces' keys and the SFT's, as before
    assert names[start - 1] == "generation_batch_size" and names[start:start + 2] == shared
    assert names[start + 2] == "sft_backend" and "wandb" not in names


@pytest.mark.parametrize("override, message", [
    ("device=tpu", "device='tpu' is not a torch device"),
    ("threads=-1", "threads must be >= 0, got -1"),
])
def test_a_bad_device_setting_of_distill_is_one_line_naming_its_key(override, message):
    with pytest.raises(TandemError, match=rf"^distill: {message}"):
        load_config(DistillConfig, None, [override])
