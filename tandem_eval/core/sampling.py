"""The evaluation's sampling: a preset of the one sampling config, `tandem.rollout.sampling.SamplingConfig`.

`eval_sampling()` is the paper's evaluation sampling (temperature 0.7, top-p 0.8, top-k 20,
3,000 response tokens), which `ours` uses as it is; every other preset is a named override
of it (`tandem_eval.core.presets`: `paper` changes the seed to 17). An evaluation's sampling has
five keys (`SAMPLING_FIELDS`, each a flag of the eval tools): every output records them
(`record`), and a config section of them (`sampling_section`) takes those five keys, a key
left out keeping the section's default (`tandem.io.strict`: overrides merge key by key).
"""

from __future__ import annotations

import typing
from collections.abc import Callable
from dataclasses import replace
from types import SimpleNamespace

from tandem.rollout.sampling import SamplingConfig, check_sampling_values
from tandem.io.strict import coerce, preset_section

SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "max_new_tokens", "seed")
PAPER = SamplingConfig(temperature=0.7, top_p=0.8, top_k=20, max_new_tokens=3000, seed=0)


def eval_sampling(**overrides) -> SamplingConfig:
    """The evaluation's sampling: the paper's (see the module docstring), with `overrides` by name."""
    return replace(PAPER, **overrides)


def record(sampling: SamplingConfig) -> dict:
    """What an output records of its sampling: the five evaluation keys."""
    return {name: getattr(sampling, name) for name in SAMPLING_FIELDS}


def sampling_section(default: Callable[[], SamplingConfig] = eval_sampling):
    """A config field holding an evaluation's sampling: `default()` by default, its keys the five, a key left
    out keeping the default's value (`tandem.io.strict.Preset`)."""
    return preset_section(default, SAMPLING_FIELDS)


def flag_sampling(values: dict) -> SamplingConfig:
    """The sampling the eval tools' flags ask for: a value of the wrong type refused as the strict parse refuses
    it (`sampling.top_p must be a number`), a value out of range named as the flag the user typed (`--top-p`)."""
    hints = typing.get_type_hints(SamplingConfig)
    typed = {name: coerce(values[name], hints[name], f"sampling.{name}") for name in SAMPLING_FIELDS}
    check_sampling_values(SimpleNamespace(**typed), name=lambda field: "--" + field.replace("_", "-"))
    return SamplingConfig(**typed)
