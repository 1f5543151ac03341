"""The demo's targets and the verdict on each, computed from the evaluation's numbers.

Accuracy comparisons are paired over the same test problems (`stats.paired_difference`);
drift is compared with the base's sampling-noise floor. The thresholds are the demo's
targets, fixed here and never tuned to a run:

- RL learns: each senior's solo accuracy at least `MIN_RL_GAIN` above the base's and
  more than `MIN_RL_Z` standard errors above it.
- Finding 1: TRL's solo accuracy at most `MAX_SOLO_DEFICIT` below GRPO's.
- Finding 2: TRL's handoff accuracy above GRPO's by more than `MIN_HANDOFF_Z` SE.
- Finding 3: TRL's drift from the base below GRPO's, and GRPO's above the noise floor.
"""

from __future__ import annotations

from dataclasses import dataclass

from tandem_app.stats import paired_difference

MIN_RL_GAIN = 0.10
MIN_RL_Z = 3.0
MAX_SOLO_DEFICIT = 0.03
MIN_HANDOFF_Z = 2.0
SENIORS = {"grpo": "GRPO", "tandem": "TRL"}


@dataclass(frozen=True)
class Finding:
    key: str  # rl_learns | solo_match | handoff | drift
    title: str
    text: str  # the numbers behind the verdict
    met: bool


def paired(res: dict, a: str, b: str, mode: str) -> tuple[float, float]:
    """Mean and SE of per-problem accuracy(a) - accuracy(b) for `mode` (solo|handoff)."""
    ra, rb = res[a], res[b]
    return paired_difference(ra[f"{mode}_counts"], ra[f"{mode}_n"], rb[f"{mode}_counts"], rb[f"{mode}_n"])


def rl_learns(res: dict) -> Finding:
    parts, met = [], True
    for name, label in SENIORS.items():
        d, se = paired(res, name, "base", "solo")
        ok = d >= MIN_RL_GAIN and d > MIN_RL_Z * se
        met = met and ok
        parts.append(f"{label} - base = {d:+.3f} ± {se:.3f} ({_z(d, se)})")
    rule = f"each needs >= +{MIN_RL_GAIN:.2f} and > {MIN_RL_Z:g} SE"
    return Finding("rl_learns", "RL learns", f"solo accuracy {'; '.join(parts)}; {rule}", met)


def solo_match(res: dict) -> Finding:
    d, se = paired(res, "tandem", "grpo", "solo")
    text = f"TRL - GRPO solo accuracy = {d:+.3f} ± {se:.3f}; TRL may be at most {MAX_SOLO_DEFICIT:.2f} below"
    return Finding("solo_match", "1. TRL matches GRPO solo", text, d >= -MAX_SOLO_DEFICIT)


def handoff(res: dict) -> Finding:
    d, se = paired(res, "tandem", "grpo", "handoff")
    text = f"TRL - GRPO handoff accuracy = {d:+.3f} ± {se:.3f} ({_z(d, se)}); needs > {MIN_HANDOFF_Z:g} SE"
    return Finding("handoff", "2. TRL hands off better than GRPO", text, d > 0 and d > MIN_HANDOFF_Z * se)


def drift(res: dict) -> Finding:
    trl, grpo, floor = (res[n]["drift_js_vs_base"] for n in ("tandem", "grpo", "base"))
    text = (
        f"JS(TRL, base) = {trl:.4f} vs JS(GRPO, base) = {grpo:.4f} bits; noise floor (base vs base) "
        f"{floor:.4f}; needs TRL < GRPO and GRPO > floor"
    )
    return Finding("drift", "3. TRL drifts less from the base", text, trl < grpo and grpo > floor)


def findings(res: dict) -> list[Finding]:
    """The verdict on every target, in the report's order."""
    return [rl_learns(res), solo_match(res), handoff(res), drift(res)]


def verdict(f: Finding) -> str:
    """The verdict in words: "met" or "not met"."""
    return "met" if f.met else "not met"


def targets_summary(found: list[Finding]) -> str:
    """One line counting the met targets and naming each one not met, e.g. `2 of 4 targets met; not met: ...`."""
    missed = [f.title for f in found if not f.met]
    line = f"{len(found) - len(missed)} of {len(found)} targets met"
    return f"{line}; not met: {'; '.join(missed)}" if missed else line


def _z(d: float, se: float) -> str:
    return f"{d / se:+.1f} SE" if se > 0 else "SE 0"
