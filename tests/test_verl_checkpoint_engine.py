"""The verl adapter refuses checkpoint engines other than `naive` (issue 15, item 10).

verl 0.9.1's other backends (nccl, nixl, delta, ...) send weights through vLLM's layerwise
reload, which moves every layer, the junior's too, to the meta device.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("verl", reason="verl 0.9.1 is not installed")
pytest.importorskip("hydra", reason="hydra-core is not installed")

from hydra import compose, initialize_config_dir  # noqa: E402

from tandem.errors import TandemError  # noqa: E402
from tandem_verl.wiring import apply_tandem  # noqa: E402

CONFIG_DIR = Path(__file__).resolve().parents[1] / "verl" / "config"
BASE = ["actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.model.path=org/senior",
        "actor_rollout_ref.rollout.load_format=auto"]
KEY = "actor_rollout_ref.rollout.checkpoint_engine.backend"


def tandem_config(*overrides: str):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        return compose(config_name="tandem_trainer", overrides=[*BASE, *overrides])


@pytest.mark.parametrize("backend", ["nccl", "nixl", "delta_sharded"])
def test_a_non_naive_checkpoint_engine_is_refused_naming_the_key_and_the_fix(backend):
    with pytest.raises(TandemError, match=rf"checkpoint_engine.backend={backend}.*{KEY}=naive"):
        apply_tandem(tandem_config(f"{KEY}={backend}"))


def test_the_default_naive_checkpoint_engine_is_accepted():
    cfg = tandem_config()
    assert cfg.actor_rollout_ref.rollout.checkpoint_engine.backend == "naive"
    apply_tandem(cfg)
