"""The evaluation's sampling: the one home of its defaults.

`EvalSampling()` is the paper's evaluation sampling (temperature 0.7, top-p 0.8, top-k 20,
3,000 response tokens), which `ours` uses as it is; every other preset is a named override
of it (`tandem_eval.presets`: `paper` changes the seed to 17). Every output records these
values; `config()` is the one conversion to the `tandem.sampling.SamplingConfig` every
backend takes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "max_new_tokens", "seed")


@dataclass
class EvalSampling:
    """The evaluation's sampling, defaults once: the paper's (see the module docstring)."""

    temperature: float = 0.7
    top_p: float = 0.8
    top_k: int = 20  # 0 = off
    max_new_tokens: int = 3000
    seed: int = 0

    def __post_init__(self):
        from tandem.sampling import check_sampling_values  # imports torch; keep --help light

        check_sampling_values(self, name=lambda field: "--" + field.replace("_", "-"))

    def record(self) -> dict:
        return asdict(self)

    def config(self):
        """The `tandem.sampling.SamplingConfig` every backend takes (the one conversion)."""
        from tandem.sampling import SamplingConfig

        return SamplingConfig(**asdict(self))
