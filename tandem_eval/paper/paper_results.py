"""The eval outputs of several checkpoints, read back for the paper's figures and table.

A checkpoint's results live in one directory (the layout `tandem_eval.paper.reproduce` writes):
    solo/       an `eval_solo` output directory (summary.json and <benchmark>.summary.json files)
    handoff/    an `eval_step_handoff` output directory
    legibility.json   `tandem_eval.analysis.legibility` output (optional)
Per benchmark, the per-problem (n, c) counts are what the bootstrap resamples; so are the
handoff's counts over the samples without a leak and the prefix transfer's per fraction
(`tandem_eval.core.leak`, `tandem_eval.analysis.prefix_transfer`), where the outputs hold them. Checkpoints
evaluated with different presets, benchmark sets or sample counts are refused: their
pass@k would not be comparable.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tandem.errors import TandemError
from tandem.io.jsonl import read_json

PHASES = ("solo", "handoff")


@dataclass
class PhaseResult:
    preset: str
    ks: list[int]
    counts: dict[str, list[tuple[int, int]]]  # benchmark -> per-problem (n, c)
    config: dict
    # tandem_eval.core.leak and tandem_eval.analysis.prefix_transfer (empty for outputs written before them)
    rates: dict[str, dict] = field(default_factory=dict)  # benchmark -> leak, final-author and budget rates
    clean_counts: dict[str, list[tuple[int, int]]] = field(default_factory=dict)  # handoff without a leak
    prefix_counts: dict[str, dict[str, list[tuple[int, int]]]] = field(default_factory=dict)  # fraction -> benchmark


@dataclass
class CheckpointResult:
    label: str
    phases: dict[str, PhaseResult] = field(default_factory=dict)
    legibility: dict | None = None
    drift: dict | None = None


RERUN = "re-run the evaluation that writes it"


def _read_json(path: Path) -> dict:
    return read_json(path, RERUN)


def _field(document: dict, key: str, path: Path):
    """document[key]; a summary without it (damaged, or not an eval's) is one line naming the file."""
    if key not in document:
        raise TandemError(f"{path}: no {key!r} in it, so not an eval summary; {RERUN}")
    return document[key]


def _pairs(rows, path: Path) -> list[tuple[int, int]]:
    """Per-problem (n, c) counts; rows of another shape are one line naming the file."""
    try:
        return [(int(p["n"]), int(p["c"])) for p in rows]
    except (KeyError, TypeError, ValueError):
        raise TandemError(f"{path}: its per-problem rows are not {{n, c}} counts; {RERUN}") from None


def load_phase(directory: Path) -> PhaseResult:
    """One `eval_solo` / `eval_step_handoff` output directory."""
    from tandem_eval.core.resume import file_stem

    summary_path = directory / "summary.json"
    if not summary_path.is_file():
        raise TandemError(f"{summary_path}: no such file; run the evaluation first (or pass its output directory)")
    overall = _read_json(summary_path)
    benchmarks, ks = _field(overall, "benchmarks", summary_path), _field(overall, "ks", summary_path)
    if not isinstance(benchmarks, dict) or not isinstance(ks, list) or not all(isinstance(k, int) for k in ks):
        raise TandemError(f"{summary_path}: 'benchmarks' is not a mapping or 'ks' not a list of k; {RERUN}")
    counts, rates, clean, prefix = {}, {}, {}, {}
    for name in benchmarks:
        per_path = directory / f"{file_stem(name)}.summary.json"
        per = _read_json(per_path)
        counts[name] = _pairs(_field(per, "per_problem", per_path), per_path)
        if "answer_visible" in per:
            rates[name] = {k: _field(per, k, per_path) for k in ("answer_visible", "final_author", "hit_budget")}
        if "leak_controlled" in per:
            clean[name] = _pairs(_field(per["leak_controlled"], "per_problem", per_path), per_path)
        prefix_path = directory / f"{file_stem(name)}.prefix.summary.json"
        fractions = _field(_read_json(prefix_path), "fractions", prefix_path) if prefix_path.is_file() else {}
        for fraction, result in fractions.items():
            prefix.setdefault(fraction, {})[name] = _pairs(_field(result, "per_problem", prefix_path), prefix_path)
    if not counts:
        raise TandemError(f"{summary_path}: no benchmarks in it; re-run the evaluation")
    config = overall.get("config") if isinstance(overall.get("config"), dict) else {}
    return PhaseResult(overall.get("preset", config.get("preset", "ours")), ks, counts, config, rates, clean, prefix)


def load_checkpoint(label: str, directory: str | Path) -> CheckpointResult:
    directory = Path(directory)
    result = CheckpointResult(label)
    for phase in PHASES:
        if (directory / phase / "summary.json").is_file():
            result.phases[phase] = load_phase(directory / phase)
    if not result.phases:
        raise TandemError(f"{directory}: neither solo/summary.json nor handoff/summary.json; pass a checkpoint's "
                          "result directory")
    path = directory / "legibility.json"
    if path.is_file():
        leg = _read_json(path)
        result.legibility, result.drift = leg.get("legibility"), leg.get("drift")
        if not all(isinstance(v, (dict, type(None))) for v in (result.legibility, result.drift)):
            raise TandemError(f"{path}: 'legibility' and 'drift' are not eval-legibility's results; re-run "
                              "eval-legibility, which writes it")
    return result


def check_comparable(results: list[CheckpointResult]) -> str:
    """The preset every phase of every checkpoint shares, or one line naming the first mismatch.

    Within a phase, the checkpoints must also share benchmarks, k and samples per problem.
    """
    first_preset: tuple[str, str] | None = None
    first_phase: dict[str, tuple[str, tuple]] = {}
    for r in results:
        for phase, pr in r.phases.items():
            where = f"{r.label}/{phase}"
            if first_preset is None:
                first_preset = (where, pr.preset)
            elif pr.preset != first_preset[1]:
                raise TandemError(f"{where} was evaluated with the {pr.preset!r} preset and {first_preset[0]} with "
                                  f"{first_preset[1]!r}; re-run one of them so that both use the same preset")
            key = (tuple(pr.ks), tuple(sorted(pr.counts)), tuple(sorted({n for c in pr.counts.values() for n, _ in c})))
            if phase not in first_phase:
                first_phase[phase] = (where, key)
            elif key != first_phase[phase][1]:
                raise TandemError(f"{where} and {first_phase[phase][0]} differ in benchmarks, k or samples per "
                                  "problem; evaluate every checkpoint with the same flags")
    if first_preset is None:
        raise TandemError("no eval results to compare")
    return first_preset[1]
