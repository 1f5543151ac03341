"""Evaluation presets: one table of the values that decide what an evaluation measures.

`ours` is this project's default evaluation; `paper` is the evaluation behind the
paper's numbers, read from the release (CSSLab/Tandem-RLVR at 7ba85e0: `eval/config.py`,
`eval/common.py`, `eval/solo.py`, `eval/handoff.py`, `data/build_evals.py`). A preset
fills every flag the user leaves out; a flag given explicitly wins and is recorded as
given. Every output records the preset's name, and a run refuses to mix its outputs with
those of another preset (`tandem_eval.core.resume`). `tandem_eval/README.md` lists what the
`paper` preset still does differently from the release, and why.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from tandem.errors import TandemError
from tandem_eval.core.prompts import INSTRUCTION, PAPER_INSTRUCTION
from tandem.rollout.sampling import SamplingConfig
from tandem_eval.core.sampling import SAMPLING_FIELDS, eval_sampling, record


@dataclass(frozen=True)
class EvalPreset:
    name: str
    benchmarks: tuple[str, ...]  # each its own pass@k; `macro` is their plain mean
    n: int  # samples per problem (k = 1, 2, 4, ... <= n)
    sampling: SamplingConfig  # eval_sampling() or a named override of it
    # The response budget of a prompt of length L is min(max_new_tokens, context_length - L - context_reserve);
    # None = max_new_tokens whatever the prompt (the engine's own context is the only bound).
    context_length: int | None
    context_reserve: int
    instruction: str  # appended to the problem
    instruction_separator: str  # between the problem and the instruction
    errata: str  # AMC 2024 answers: "fixed" or "source" (tandem_eval.core.datasets)
    max_rounds: int | None  # handoff: at most this many (senior turn, junior turn) rounds; None = no cap

    def value(self, name: str):
        """The preset's value of a flag-level setting (a sampling field or one of its own)."""
        return getattr(self.sampling, name) if name in SAMPLING_FIELDS else getattr(self, name)

    def record(self) -> dict:
        d = asdict(self)
        del d["sampling"]
        return {**d, **record(self.sampling), "benchmarks": list(self.benchmarks)}


PRESETS: dict[str, EvalPreset] = {
    p.name: p
    for p in [
        EvalPreset("ours", benchmarks=("aime_24_26", "amc_23_25", "minerva"), n=8, sampling=eval_sampling(),
                   context_length=None,
                   context_reserve=0, instruction=INSTRUCTION, instruction_separator="\n", errata="fixed",
                   max_rounds=None),
        # The release: eval/config.py (sampling), eval/common.py (DEFAULT_SETS, KS, MAX_MODEL_LEN 4096,
        # CONTEXT_RESERVE 8, chat_prefix), eval/solo.py (n 8, seed 17), eval/handoff.py (MAX_ROUNDS 150),
        # data/build_evals.py (the instruction, appended with no separator; AMC answers as published).
        EvalPreset("paper", benchmarks=("aime2024", "aime2025", "aime2026", "amc_23_25"), n=8,
                   sampling=eval_sampling(seed=17), context_length=4096,
                   context_reserve=8, instruction=PAPER_INSTRUCTION, instruction_separator="", errata="source",
                   max_rounds=150),
    ]
}
DEFAULT_PRESET = "ours"


def get_preset(name: str) -> EvalPreset:
    if name not in PRESETS:
        raise TandemError(f"unknown eval preset {name!r}; choose one of {', '.join(PRESETS)}")
    return PRESETS[name]


def response_budget(preset: EvalPreset, max_new_tokens: int, prompt_len: int) -> int:
    """Response tokens a prompt of `prompt_len` tokens may use under `preset` (>= 1, or an error)."""
    if preset.context_length is None:
        return max_new_tokens
    budget = min(max_new_tokens, preset.context_length - prompt_len - preset.context_reserve)
    if budget < 1:
        raise TandemError(f"a prompt of {prompt_len} tokens leaves no room for a response in the {preset.name} "
                          f"preset's {preset.context_length}-token context; drop that problem or use another preset")
    return budget
