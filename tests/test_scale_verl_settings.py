"""A verl run's settings are read once per process: the driver, the trainer and the agent loops share one parse."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("verl", reason="verl 0.9.1 is not installed")
pytest.importorskip("hydra", reason="hydra-core is not installed")

from hydra import compose, initialize_config_dir  # noqa: E402

from tandem.io import legacy  # noqa: E402
from tandem.errors import TandemError  # noqa: E402
from tandem_verl import hydra_settings as settings_module  # noqa: E402
from tandem_verl.hydra_settings import run_settings  # noqa: E402
from tandem_verl.tandem_block import TandemVerlConfig  # noqa: E402
from tandem_verl.wiring import apply_tandem  # noqa: E402

CONFIG_DIR = Path(__file__).resolve().parents[1] / "verl" / "config"
BASE = ["actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.model.path=org/senior",
        "actor_rollout_ref.rollout.load_format=auto"]


def config(*overrides: str):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        return compose(config_name="tandem_trainer", overrides=[*BASE, *overrides])


@pytest.fixture
def parses(monkeypatch):
    """Counts of each parse and validation the settings go through, from a cold per-process cache."""
    settings_module._parse.cache_clear()
    counts = {"tandem": 0, "partner_reward": 0, "legacy placement": 0}

    def counted(name, fn):
        def wrapper(*args, **kwargs):
            counts[name] += 1
            return fn(*args, **kwargs)
        return wrapper

    monkeypatch.setattr(TandemVerlConfig, "from_dict", classmethod(counted("tandem", TandemVerlConfig.from_dict.__func__)))
    monkeypatch.setattr(settings_module, "build", counted("partner_reward", settings_module.build))
    monkeypatch.setattr(legacy, "placement", counted("legacy placement", legacy.placement))
    yield counts
    settings_module._parse.cache_clear()


@pytest.mark.parametrize("overrides", [
    ["tandem.prob_senior=0.25"],  # tandem training
    ["tandem.enable=false", "partner_reward.weight=0.5"],  # GRPO scored by its base (RLT's setting)
    ["tandem.enable=false", "partner_reward.kind=transfer", "partner_reward.weight=0.5"],  # GRPO with RLTR's transfer reward
    ["tandem.prob_senior=0.25", "partner_reward.kind=transfer", "partner_reward.weight=0.5", "tandem.placement=split",
     "actor_rollout_ref.rollout.tensor_model_parallel_size=2"],  # split placement
])
def test_the_driver_and_every_later_reader_in_its_process_share_one_parse(parses, overrides):
    cfg = config(*overrides)
    driver = apply_tandem(cfg)  # wires verl: mutates cfg, never the two sections it read
    for _ in range(3):  # the trainer, the task runner and an agent loop in the same process
        assert run_settings(cfg) is driver
    assert parses == {"tandem": 1, "partner_reward": 1, "legacy placement": 1}


def test_another_run_in_the_same_process_is_read_afresh(parses):
    a, b = run_settings(config("tandem.prob_senior=0.25")), run_settings(config("tandem.prob_senior=0.75"))
    assert (a.tandem.process.prob_senior, b.tandem.process.prob_senior) == (0.25, 0.75)
    assert parses["tandem"] == 2


def test_a_bad_section_is_refused_by_the_one_reader_every_time_it_is_asked(parses):
    cfg = config("tandem.prob_senior=1.5")
    for _ in range(2):  # a refusal is never cached as a success
        with pytest.raises(TandemError, match=r"prob_senior must be a probability in \[0, 1\], got 1.5"):
            run_settings(cfg)
