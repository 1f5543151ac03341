"""`EvalRun`: one evaluation's settings, typed, resolved from the flags once and checked once.

The flags of `eval_solo`, `eval_step_handoff` and `handoff_protocols` (see
`tandem_eval.core.flags.add_common_arguments`) arrive as an argparse namespace in which a
flag left out is None; `EvalRun.from_args` fills each from the `--preset`
(`tandem_eval.core.presets`) and builds the frozen settings with `tandem.io.strict.build`, the
parse every config of the project goes through (a flag of the wrong type is one line
naming it); the runner and its resume logic read them, and the backends are built from
`engine` (`tandem_backends.settings.EngineSettings`: the models, `--backend` and the
flags of how they run). Nothing downstream sees the namespace. `--instruction` left out
takes the evaluated (senior) model's recorded prompt format first
(`tandem_eval.core.prompts.recorded_instruction`: the demo's models were trained on the bare
problem), then the preset's.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass
from dataclasses import fields as dataclass_fields
from pathlib import Path

from tandem.errors import TandemError
from tandem.models.loading import check_model_path
from tandem.io.strict import build
from tandem_backends.settings import EngineSettings
from tandem_eval.core.presets import DEFAULT_PRESET, EvalPreset, get_preset
from tandem_eval.core.prompts import recorded_instruction
from tandem.rollout.sampling import SamplingConfig
from tandem_eval.core.sampling import SAMPLING_FIELDS, flag_sampling

# The flags a preset fills when they are left out (None), each named as the preset names it.
PRESET_FLAGS = ("benchmarks", "n", *SAMPLING_FIELDS, "errata", "instruction")


@dataclass(frozen=True)
class EvalRun:
    """What one evaluation run does; see the module docstring."""

    preset: EvalPreset
    benchmarks: tuple[str, ...]
    n: int
    sampling: SamplingConfig  # the five keys an evaluation records (`tandem_eval.core.sampling`)
    out_dir: Path
    errata: str
    instruction: str
    engine: EngineSettings
    max_problems: int | None = None
    data_dir: str | None = None
    offline: bool = False
    fields: str | None = None
    save_every: int = 32
    overwrite: bool = False

    def __post_init__(self) -> None:
        if self.save_every < 1:
            raise TandemError(f"--save-every must be >= 1, got {self.save_every}")
        if self.n < 1:
            raise TandemError(f"--n must be >= 1, got {self.n}")
        if self.max_problems is not None and self.max_problems < 1:
            raise TandemError(f"--max-problems must be >= 1, got {self.max_problems}")
        if self.out_dir.exists() and not self.out_dir.is_dir():
            raise TandemError(f"--out-dir {self.out_dir} is a file; pass a directory")

    @classmethod
    def from_args(cls, args) -> EvalRun:
        """The run the parsed flags ask for: each flag left out (None) takes the preset's value."""
        preset = get_preset(getattr(args, "preset", None) or DEFAULT_PRESET)
        given = {name: getattr(args, name, None) for name in PRESET_FLAGS}
        if given["instruction"] is None:  # the model's own format, where it records one, before the preset's
            given["instruction"] = recorded_instruction(args.model if hasattr(args, "model") else args.senior)
        value = {name: preset.value(name) if v is None else v for name, v in given.items()}
        benchmarks = value["benchmarks"]
        if isinstance(benchmarks, str):
            benchmarks = tuple(b.strip() for b in benchmarks.split(",") if b.strip())
        run = build(cls, {"preset": preset, "benchmarks": list(benchmarks), "n": value["n"],
                          "sampling": flag_sampling(value), "out_dir": Path(args.out_dir),
                          "errata": value["errata"], "instruction": value["instruction"],
                          "engine": engine_settings(args, preset, value["seed"]), **given_optional(cls, args)})
        check_inputs(run)
        return run


def check_inputs(run: EvalRun) -> None:
    """A local model folder or benchmark file that is not there: one line now, before torch is imported
    (hub names and preset benchmarks pass; the loaders check the rest)."""
    for model in (run.engine.senior, run.engine.junior):
        if model:
            check_model_path(model)
    for spec in run.benchmarks:
        if spec.endswith((".jsonl", ".parquet")) and not Path(spec).is_file():
            raise TandemError(f"{spec}: no such benchmark file; pass an existing .jsonl or .parquet file")


def given_optional(cls, args) -> dict:
    """The settings of `cls` with a default that the tool has a flag for (a tool without the flag keeps the default)."""
    return {f.name: getattr(args, f.name) for f in dataclass_fields(cls)
            if f.default is not MISSING and hasattr(args, f.name)}


def engine_settings(args, preset: EvalPreset, seed: int) -> dict:
    """The `EngineSettings` the flags ask for: the tool's models (`--model`, or `--senior` and `--junior`),
    `--backend` and the flags of how they run; vLLM engines get the preset's context and the sampling seed."""
    senior = args.model if hasattr(args, "model") else args.senior
    return {**given_optional(EngineSettings, args), "senior": senior, "junior": getattr(args, "junior", None),
            "max_model_len": preset.context_length, "seed": seed}
