"""The run's settings on verl, read from its Hydra config once per process.

verl hands each Ray actor and agent-loop worker its own copy of the config (a DictConfig),
never our objects, so each process that needs the `tandem:` block or the `partner_reward`
section reads them from it. `run_settings` is the one reader: it parses and validates both
strictly (`TandemVerlConfig.from_dict`, `tandem.io.strict.build`) and keeps the result per process,
keyed by the two sections' contents, so the driver (`wiring.apply_tandem`), the task runner and
trainer (`trainer`) and the agent loops (`agent_loop`, `transfer_reward`, `solution_writer`)
get one object, whoever asks first, and no section is parsed twice in a process.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass

from omegaconf import DictConfig, OmegaConf

from tandem.rewards.partner_config import PartnerRewardConfig
from tandem.io.strict import build
from tandem_verl.tandem_block import TandemVerlConfig

SECTIONS = ("tandem", "partner_reward")  # the config sections the settings are read from


@dataclass(frozen=True)
class RunSettings:
    """A verl run's tandem block and partner reward, parsed and validated."""

    tandem: TandemVerlConfig
    partner: PartnerRewardConfig


def run_settings(config: DictConfig) -> RunSettings:
    """The settings of a full verl config (an absent section takes its defaults); parsed once per process."""
    return _parse(_sections(config))


def _sections(config: DictConfig) -> str:
    """The sections as one JSON text: what the settings are keyed by (resolved, keys sorted)."""
    out = {}
    for name in SECTIONS:
        block = config.get(name)
        out[name] = OmegaConf.to_container(block, resolve=True) if isinstance(block, DictConfig) else block
    return json.dumps(out, sort_keys=True)


@functools.lru_cache(maxsize=8)
def _parse(sections: str) -> RunSettings:
    d = json.loads(sections)
    return RunSettings(TandemVerlConfig.from_dict(d["tandem"]),
                       build(PartnerRewardConfig, d["partner_reward"] or {}, "partner_reward"))
