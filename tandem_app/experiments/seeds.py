"""The demo over several seeds: one table with every number per seed, its mean and spread.

`tandem-rlvr demo --seeds 0 1 2` runs the demo once per seed into OUT/seed-S and then
`write_seed_table` reads each run's `eval/results.json` and writes OUT/seeds.md and
OUT/seeds.json. The spread is the sample standard deviation over seeds (and the range);
each target's verdict is counted over seeds with the same rules as the one-seed report.
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path

from tandem.io.jsonl import write_json
from tandem_app.experiments.findings import findings, paired

# (label, function of one seed's results) for every number in the table.
ROWS = [
    ("base solo acc", lambda r: r["base"]["solo_acc"]),
    ("GRPO solo acc", lambda r: r["grpo"]["solo_acc"]),
    ("TRL solo acc", lambda r: r["tandem"]["solo_acc"]),
    ("GRPO - base, solo", lambda r: paired(r, "grpo", "base", "solo")[0]),
    ("TRL - base, solo", lambda r: paired(r, "tandem", "base", "solo")[0]),
    ("TRL - GRPO, solo", lambda r: paired(r, "tandem", "grpo", "solo")[0]),
    ("base handoff acc", lambda r: r["base"]["handoff_acc"]),
    ("GRPO handoff acc", lambda r: r["grpo"]["handoff_acc"]),
    ("TRL handoff acc", lambda r: r["tandem"]["handoff_acc"]),
    ("TRL - GRPO, handoff", lambda r: paired(r, "tandem", "grpo", "handoff")[0]),
    ("TRL - GRPO, handoff, in SE", lambda r: _z(*paired(r, "tandem", "grpo", "handoff"))),
    ("drift JS(GRPO, base), bits", lambda r: r["grpo"]["drift_js_vs_base"]),
    ("drift JS(TRL, base), bits", lambda r: r["tandem"]["drift_js_vs_base"]),
    ("noise floor JS(base, base), bits", lambda r: r["base"]["drift_js_vs_base"]),
    ("terse steps, base", lambda r: r["base"]["solo_terse_share"]),
    ("terse steps, GRPO", lambda r: r["grpo"]["solo_terse_share"]),
    ("terse steps, TRL", lambda r: r["tandem"]["solo_terse_share"]),
]


def seed_summary(results: dict) -> dict:
    """Every table number and every verdict of one seed's results."""
    return {
        "numbers": {label: fn(results) for label, fn in ROWS},
        "verdicts": {f.title: f.met for f in findings(results)},
    }


def spread(values: list[float]) -> dict:
    return {
        "mean": statistics.fmean(values),
        "sd": statistics.stdev(values) if len(values) > 1 else 0.0,
        "min": min(values),
        "max": max(values),
    }


def seed_table(summaries: dict[int, dict], minutes: dict[int, float] | None = None) -> list[str]:
    """Markdown lines: one row per number (per seed, mean ± sd, range), then the verdict counts."""
    seeds = list(summaries)
    head = ["number"] + [f"seed {s}" for s in seeds] + ["mean ± sd", "range"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for label, _ in ROWS:
        values = [summaries[s]["numbers"][label] for s in seeds]
        sp = spread(values)
        d = 4 if "JS" in label else 3  # drifts are small numbers in bits
        cells = [label] + [f"{v:.{d}f}" for v in values]
        cells += [f"{sp['mean']:.{d}f} ± {sp['sd']:.{d}f}", f"{sp['min']:.{d}f} to {sp['max']:.{d}f}"]
        lines.append("| " + " | ".join(cells) + " |")
    if minutes:
        cells = ["wall time, minutes"] + [f"{minutes[s]:.1f}" for s in seeds]
        sp = spread([minutes[s] for s in seeds])
        lines.append("| " + " | ".join(cells + [f"{sp['mean']:.1f} ± {sp['sd']:.1f}", ""]) + " |")
    lines += ["", "| target | " + " | ".join(f"seed {s}" for s in seeds) + " | met in |", "|" + "---|" * (len(seeds) + 2)]
    for title in summaries[seeds[0]]["verdicts"]:
        marks = [summaries[s]["verdicts"][title] for s in seeds]
        lines.append(
            f"| {title} | " + " | ".join("met" if m else "not met" for m in marks) + f" | {sum(marks)}/{len(marks)} |"
        )
    return lines


def write_seed_table(out: str | Path, seeds: list[int]) -> Path:
    """OUT/seeds.md and OUT/seeds.json from the runs OUT/seed-S; return the markdown path."""
    out = Path(out)
    summaries, minutes = {}, {}
    for s in seeds:
        run = out / f"seed-{s}"
        summaries[s] = seed_summary(json.loads((run / "eval" / "results.json").read_text()))
        minutes[s] = sum(json.loads((run / "timings.json").read_text()).values()) / 60
    write_json(out / "seeds.json", {str(s): {**summaries[s], "minutes": minutes[s]} for s in seeds})
    lines = [
        f"# Tandem RL demo over seeds {', '.join(map(str, seeds))}",
        "",
        "Each seed is a full `tandem-rlvr demo` run (its report: `seed-S/report.md`). Differences are paired "
        "over each seed's test problems; spread is the sample standard deviation over seeds.",
        "",
        *seed_table(summaries, minutes),
        "",
    ]
    path = out / "seeds.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _z(d: float, se: float) -> float:
    return d / se if se > 0 else float("inf") if d > 0 else 0.0


def finished_seeds_parser(doc: str):
    """The command line of an experiment over finished demo seeds: --out (OUT/seed-S), --seeds, --threads, --quick."""
    import argparse

    p = argparse.ArgumentParser(description=doc.split("\n")[0])
    p.add_argument("--out", type=Path, required=True, help="the folder holding the demo seeds (OUT/seed-S)")
    p.add_argument("--seeds", type=int, nargs="+", required=True)
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default: %(default)s)")
    p.add_argument("--quick", action="store_true", help="seeds made by `tandem-rlvr demo --quick` (its eval size)")
    return p
