"""The paper's Table 2 from eval outputs: macro solo and handoff pass@1/4/8 per checkpoint, with bootstrap SEs.

Rows: the published numbers first, in a table of their own under a caption that says they are
the paper's models on its benchmarks (`tandem_eval/paper/paper_reference.json`, each with its
source), then one row per checkpoint under a caption naming the benchmarks it averages over. Cells are percentages, `mean ± SE` (SE: bootstrap
over problems, `tandem_eval.core.bootstrap`). A second table gives every benchmark, and a
third legibility (the junior's mean cross-entropy on the checkpoint's solo responses) and
drift (JS divergence of its token usage from the junior's). Where the outputs hold them, a
fourth gives which part of the handoff score is the junior's: handoff pass@k over the
samples without a leak (`handoff_no_leak`), prefix transfer per fraction (`prefix`), and
the leak, final-author and budget rates per phase (`rates`). Written as Markdown and JSON;
the JSON holds, per checkpoint label, `solo` and `handoff` pass@k per benchmark and
`macro` (fractions, with `se`; the leak-controlled ones with `left_out` per k).

    python -m tandem_eval.paper.paper_table --checkpoint base=DIR/runs/base --checkpoint trl=DIR/runs/trl --out DIR/table
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from tandem.errors import TandemError
from tandem.io.jsonl import write_json
from tandem_eval.core.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, pass_at_k_with_se
from tandem_eval.core.leak import pass_at_k_over_clean_with_se
from tandem_eval.paper.paper_results import PHASES, CheckpointResult, check_comparable, load_checkpoint
from tandem_eval.core import tool

REFERENCE_FILE = Path(__file__).with_name("paper_reference.json")
TABLE_KS = (1, 4, 8)

DESCRIPTION = ("Table 2 (macro solo and handoff pass@1/4/8 with bootstrap SEs, the paper's published numbers above) "
               "plus per-benchmark pass@k and legibility / drift, as Markdown and JSON.")


def load_reference(path: Path = REFERENCE_FILE) -> list[dict]:
    return json.loads(path.read_text(encoding="utf-8"))["rows"]


def build_table(results: list[CheckpointResult], resamples: int = DEFAULT_RESAMPLES, seed: int = DEFAULT_SEED,
                reference: list[dict] | None = None) -> dict:
    """The table as data: {"preset", "bootstrap", "reference", "checkpoints": {label: {...}}}."""
    preset = check_comparable(results)
    table: dict = {"preset": preset, "bootstrap": {"resamples": resamples, "seed": seed, "over": "problems"},
                   "units": "fractions (the Markdown shows percentages)", "reference": reference or [],
                   "checkpoints": {}}
    for r in results:
        row: dict = {}
        for phase, pr in r.phases.items():
            row[phase] = pass_at_k_with_se(pr.counts, pr.ks, resamples, seed)
            row[phase + "_ks"] = pr.ks
            if pr.rates:
                row.setdefault("rates", {})[phase] = pooled_rates(pr.rates)
        handoff = r.phases.get("handoff")
        if handoff is not None and handoff.clean_counts:
            row["handoff_no_leak"] = pass_at_k_over_clean_with_se(handoff.clean_counts, handoff.ks, resamples, seed)
        if handoff is not None and handoff.prefix_counts:
            row["prefix"] = {f: pass_at_k_over_clean_with_se(c, handoff.ks, resamples, seed)
                             for f, c in sorted(handoff.prefix_counts.items(), key=lambda x: float(x[0]))}
        if r.legibility is not None:
            row["legibility"] = {k: r.legibility.get(k) for k in ("mean_ce", "macro_ce", "n_scored", "n_dropped")}
        if r.drift is not None:
            row["drift"] = {"js_bits": r.drift.get("js_bits")}
        table["checkpoints"][r.label] = row
    return table


def pooled_rates(rates: dict[str, dict]) -> dict:
    """One phase's leak, final-author and budget rates over all its benchmarks' samples."""
    vis = {k: sum(r["answer_visible"][k] for r in rates.values()) for k in ("visible", "not_visible", "undetermined")}
    samples = sum(vis.values())
    determined = vis["visible"] + vis["not_visible"]
    junior = sum(r["final_author"].get("junior", 0) for r in rates.values())
    hits = sum(r["hit_budget"]["count"] for r in rates.values())
    return {"samples": samples, "visible_rate": vis["visible"] / determined if determined else None,
            "undetermined_rate": vis["undetermined"] / samples if samples else None,
            "junior_answer_rate": junior / samples if samples else None,
            "hit_budget_rate": hits / samples if samples else None}


def _junior_table(table: dict) -> list[str]:
    """Handoff pass@1 with and without leaks and prefix transfer per fraction; the rates per checkpoint."""
    rows = [(lbl, row) for lbl, row in table["checkpoints"].items() if "handoff_no_leak" in row or "prefix" in row]
    if not rows:
        return []
    fractions = sorted({f for _, row in rows for f in row.get("prefix", {})}, key=float)
    pct = lambda v: "—" if v is None else f"{100 * v:.1f}%"  # noqa: E731
    lines = ["", "**Which part is the junior's** (`tandem_eval.core.leak`, `tandem_eval.analysis.prefix_transfer`): macro pass@1 "
             "in %, mean ± SE; *no leak* = over the handoff samples whose answer the senior had not shown before the "
             "junior's last turn; *prefix f* = the junior finishing the checkpoint's solo response cut at f of its "
             "tokens, before the answer; (−N) problems left out (no such sample)", "",
             "| checkpoint | handoff | handoff, no leak | " + " | ".join(f"prefix {f}" for f in fractions) + " |",
             "|" + "---|" * (3 + len(fractions))]
    for label, row in rows:
        no_leak = row.get("handoff_no_leak", {})
        cells = [_cell(row["handoff"]["macro"].get("pass@1")), _left_out_cell(no_leak)]
        cells += [_left_out_cell(row.get("prefix", {}).get(f, {})) for f in fractions]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += ["", "**Leaks and budget** (all benchmarks' samples pooled): answer visible before the junior's last "
              "turn (of the determined samples; solo: anywhere in the response), gold undetermined, final answer "
              "written by the junior, token budget spent", "",
              "| checkpoint | phase | visible | undetermined | junior's answer | budget spent |", "|---|---|---|---|---|---|"]
    for label, row in table["checkpoints"].items():
        for phase, r in row.get("rates", {}).items():
            lines.append(f"| {label} | {phase} | {pct(r['visible_rate'])} | {pct(r['undetermined_rate'])} | "
                         f"{pct(r['junior_answer_rate'])} | {pct(r['hit_budget_rate'])} |")
    return lines


def _left_out_cell(stats: dict) -> str:
    if not stats:
        return "—"
    return _cell(stats["macro"].get("pass@1")) + f" (−{stats['left_out']['pass@1']})"


def _cell(stats: dict | None) -> str:
    if not stats:
        return "—"
    return f"{100 * stats['mean']:.2f} ± {100 * stats['se']:.2f}"


def _ref_cell(ref: dict, phase: str, k: int) -> str:
    value = ref.get("macro", {}).get(phase, {}).get(f"pass@{k}")
    return "—" if value is None else f"{value:.2f}"


def _benchmarks(table: dict) -> list[str]:
    """The benchmarks the checkpoints' rows average over, in order of first appearance."""
    names = [b for row in table["checkpoints"].values() for phase in PHASES for b in row.get(phase, {})]
    return list(dict.fromkeys(b for b in names if b != "macro"))


def to_markdown(table: dict) -> str:
    boot = table["bootstrap"]
    head = ["checkpoint"] + [f"{phase} pass@{k}" for phase in PHASES for k in TABLE_KS]
    header = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines = [f"**Table 2** (preset `{table['preset']}`): macro pass@k in %, mean ± bootstrap SE "
             f"({boot['resamples']} resamples over problems, seed {boot['seed']}).", ""]
    if table["reference"]:  # a table of their own: the paper's models on the paper's benchmarks, not this run's
        lines += ["*Published reference* (italic): the paper's numbers for its models on its own benchmarks, "
                  "sources below; compare only where your benchmarks are the same.", "", *header]
        for ref in table["reference"]:
            cells = [_ref_cell(ref, phase, k) for phase in PHASES for k in TABLE_KS]
            lines.append(f"| *{ref['label']}* | " + " | ".join(cells) + " |")
        lines += ["", f"*Your checkpoints*, on {', '.join(_benchmarks(table)) or 'no benchmark'}:", ""]
    lines += header
    for label, row in table["checkpoints"].items():
        cells = [_cell(row.get(phase, {}).get("macro", {}).get(f"pass@{k}")) for phase in PHASES for k in TABLE_KS]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    if table["reference"]:
        lines += ["", "Reference rows (italic) are published numbers; their sources and what their macro averages "
                  "over are in `tandem_eval/paper/paper_reference.json`:"]
        lines += [f"- *{ref['label']}*: {ref['source']}" for ref in table["reference"]]
    for phase in PHASES:
        labels = [lbl for lbl, row in table["checkpoints"].items() if phase in row]
        if not labels:
            continue
        ks = table["checkpoints"][labels[0]][phase + "_ks"]
        benches = list(table["checkpoints"][labels[0]][phase])
        lines += ["", f"**{phase}**: pass@k per benchmark in %, mean ± SE", "",
                  "| checkpoint | benchmark | " + " | ".join(f"pass@{k}" for k in ks) + " |",
                  "|" + "---|" * (len(ks) + 2)]
        for label in labels:
            for bench in benches:
                stats = table["checkpoints"][label][phase][bench]
                lines.append(f"| {label} | {bench} | " + " | ".join(_cell(stats.get(f"pass@{k}")) for k in ks) + " |")
    lines += _junior_table(table)
    rows = [(lbl, row) for lbl, row in table["checkpoints"].items() if "legibility" in row or "drift" in row]
    if rows:
        lines += ["", "**Legibility and drift**: the junior's mean cross-entropy (nats per token) on each "
                  "checkpoint's solo responses (lower = more legible), and the JS divergence (bits) of its token "
                  "usage from the junior's on the same problems", "",
                  "| checkpoint | mean CE | macro CE | scored | dropped | drift (JS bits) |", "|---|---|---|---|---|---|"]
        for label, row in rows:
            leg, dr = row.get("legibility") or {}, row.get("drift") or {}
            fmt = lambda v, f: "—" if v is None else format(v, f)  # noqa: E731
            lines.append(f"| {label} | {fmt(leg.get('mean_ce'), '.4f')} | {fmt(leg.get('macro_ce'), '.4f')} | "
                         f"{fmt(leg.get('n_scored'), 'd')} | {fmt(leg.get('n_dropped'), 'd')} | "
                         f"{fmt(dr.get('js_bits'), '.4f')} |")
    return "\n".join(lines) + "\n"


def parse_checkpoints(specs: list[str]) -> list[tuple[str, str]]:
    out, seen = [], set()
    for spec in specs:
        label, sep, path = spec.partition("=")
        if not sep or not label or not path:
            raise TandemError(f"bad --checkpoint {spec!r}; write LABEL=DIR")
        if label in seen:
            raise TandemError(f"checkpoint label {label!r} given twice; give each checkpoint its own label")
        seen.add(label)
        out.append((label, path))
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", action="append", required=True, metavar="LABEL=DIR",
                   help="a checkpoint's result directory (solo/, handoff/, legibility.json); repeat, in row order")
    p.add_argument("--out", required=True, type=Path, help="output stem: writes STEM.md and STEM.json")
    p.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES,
                   help="bootstrap resamples over problems (default: %(default)s)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="bootstrap seed (default: %(default)s)")
    p.add_argument("--no-reference", action="store_true", help="leave out the published reference rows")


def run(args) -> int:
    from tandem.io.run_lock import check_out_file

    check_out_file(args.out)
    results = [load_checkpoint(label, path) for label, path in parse_checkpoints(args.checkpoint)]
    table = build_table(results, args.resamples, args.seed, None if args.no_reference else load_reference())
    args.out.parent.mkdir(parents=True, exist_ok=True)
    md = to_markdown(table)
    Path(f"{args.out}.md").write_text(md, encoding="utf-8")
    write_json(f"{args.out}.json", table)
    print(md)
    return 0


main = tool.entry(__name__)  # main(argv=None) -> exit status: parse, run, one-line errors


if __name__ == "__main__":
    sys.exit(main())
