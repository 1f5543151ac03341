"""The paper's pass@k figures from eval outputs: one panel per benchmark and the macro average, solo and handoff.

Rows are the phases (solo, handoff), columns the benchmarks then `macro`; each checkpoint
is one line over k (log2 axis) with a band of one bootstrap standard error (resampling
problems, `tandem_eval.core.bootstrap`; `--resamples`, default 2000, seed fixed). Where the
handoff outputs hold them, a second figure (STEM-transfer) shows which part is the
junior's: macro handoff pass@k over all samples and over those without a leak, and
prefix-transfer pass@1 over the fraction (`transfer_figure`). Written as PNG and SVG with
matplotlib's Agg backend.

    python -m tandem_eval.paper.paper_figures --checkpoint base=DIR/runs/base --checkpoint trl=DIR/runs/trl \\
        --out DIR/figures/passk
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tandem_eval.core.bootstrap import DEFAULT_RESAMPLES, DEFAULT_SEED, pass_at_k_with_se
from tandem_eval.paper.paper_results import PHASES, CheckpointResult, check_comparable, load_checkpoint
from tandem_eval.core import tool

DESCRIPTION = "pass@k curves per benchmark and macro, solo and handoff, several checkpoints, bootstrap SE bands."
FORMATS = ("png", "svg")


def passk_figure(results: list[CheckpointResult], out_stem: str | Path, resamples: int = DEFAULT_RESAMPLES,
                 seed: int = DEFAULT_SEED) -> list[Path]:
    """Draw the grid; returns the files written (STEM.png, STEM.svg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    preset = check_comparable(results)
    phases = [p for p in PHASES if any(p in r.phases for r in results)]
    columns: list[str] = []
    for r in results:
        for p in phases:
            for b in list(r.phases[p].counts) if p in r.phases else []:
                if b not in columns:
                    columns.append(b)
    columns.append("macro")
    fig, axes = plt.subplots(len(phases), len(columns), figsize=(3.2 * len(columns), 2.8 * len(phases)),
                             squeeze=False, sharex=True)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for row, phase in enumerate(phases):
        for i, r in enumerate(results):
            if phase not in r.phases:
                continue
            pr = r.phases[phase]
            stats = pass_at_k_with_se(pr.counts, pr.ks, resamples, seed)
            for col, bench in enumerate(columns):
                if bench not in stats:
                    continue
                mean = [100 * stats[bench][f"pass@{k}"]["mean"] for k in pr.ks]
                se = [100 * stats[bench][f"pass@{k}"]["se"] for k in pr.ks]
                ax = axes[row][col]
                colour = colours[i % len(colours)]
                ax.plot(pr.ks, mean, marker="o", ms=3, color=colour, label=r.label)
                ax.fill_between(pr.ks, [m - s for m, s in zip(mean, se)], [m + s for m, s in zip(mean, se)],
                                color=colour, alpha=0.2, lw=0)
        for col, bench in enumerate(columns):
            ax = axes[row][col]
            ax.set_xscale("log", base=2)
            ax.set_title(f"{phase}: {bench}", fontsize=9)
            ax.grid(alpha=0.3)
            if col == 0:
                ax.set_ylabel("pass@k (%)")
            if row == len(phases) - 1:
                ax.set_xlabel("k")
    axes[0][0].legend(fontsize=7)
    fig.suptitle(f"pass@k, preset {preset}; bands: ±1 bootstrap SE ({resamples} resamples over problems)",
                 fontsize=10)
    fig.tight_layout()
    return _save(fig, out_stem)


def transfer_figure(results: list[CheckpointResult], out_stem: str | Path, resamples: int = DEFAULT_RESAMPLES,
                    seed: int = DEFAULT_SEED) -> list[Path]:
    """Which part of the handoff is the junior's: macro handoff pass@k with and without leaks (left), macro
    prefix-transfer pass@1 over the fraction (right), each with ±1 SE. A panel without data is left out (no
    prefix transfer: the left one alone), and no file is written ([]) when no result holds either."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tandem_eval.core.leak import pass_at_k_over_clean_with_se

    handoffs = [(r.label, r.phases["handoff"]) for r in results if "handoff" in r.phases]
    handoffs = [(label, h) for label, h in handoffs if h.clean_counts or h.prefix_counts]
    if not handoffs:
        return []
    with_prefix = any(h.prefix_counts for _, h in handoffs)
    fig, axes = plt.subplots(1, 2 if with_prefix else 1, figsize=(9 if with_prefix else 4.8, 3.4), squeeze=False)
    left, right = axes[0][0], axes[0][1] if with_prefix else None
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]

    def points(stats, keys):
        got = [(x, stats["macro"][key]) for x, key in keys if stats["macro"].get(key)]
        return [x for x, _ in got], [100 * v["mean"] for _, v in got], [100 * v["se"] for _, v in got]

    for i, (label, h) in enumerate(handoffs):
        colour = colours[i % len(colours)]
        ks = [(k, f"pass@{k}") for k in h.ks]
        plain = pass_at_k_with_se(h.counts, h.ks, resamples, seed)
        left.errorbar(*points(plain, ks), color=colour, marker="o", ms=3, capsize=2, label=f"{label}: all")
        if h.clean_counts:
            clean = pass_at_k_over_clean_with_se(h.clean_counts, h.ks, resamples, seed)
            left.errorbar(*points(clean, ks), color=colour, ls="--", marker="s", ms=3, capsize=2,
                          label=f"{label}: no leak")
        fractions = sorted(h.prefix_counts, key=float)
        if fractions:
            per = {f: pass_at_k_over_clean_with_se(h.prefix_counts[f], [1], resamples, seed) for f in fractions}
            xs, ys, es = [], [], []
            for f in fractions:
                x, y, e = points(per[f], [(float(f), "pass@1")])
                xs, ys, es = xs + x, ys + y, es + e
            right.errorbar(xs, ys, yerr=es, color=colour, marker="o", ms=3, capsize=2, label=label)
    left.set_xscale("log", base=2)
    left.set(xlabel="k", ylabel="handoff pass@k (%)", title="handoff: all samples vs no leak")
    if right is not None:
        right.set(xlabel="prefix fraction f", ylabel="pass@1 (%)", title="prefix transfer to the junior")
    for ax in axes[0]:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, out_stem)


def _save(fig, out_stem: str | Path) -> list[Path]:
    import matplotlib.pyplot as plt

    out_stem = Path(out_stem)
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in FORMATS:
        path = out_stem.with_name(f"{out_stem.name}.{fmt}")
        fig.savefig(path, dpi=150)
        written.append(path)
    plt.close(fig)
    return written


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--checkpoint", action="append", required=True, metavar="LABEL=DIR",
                   help="a checkpoint's result directory (solo/, handoff/); repeat for several checkpoints")
    p.add_argument("--out", required=True, type=Path, help="output stem: writes STEM.png and STEM.svg")
    p.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES,
                   help="bootstrap resamples over problems (default: %(default)s)")
    p.add_argument("--seed", type=int, default=DEFAULT_SEED, help="bootstrap seed (default: %(default)s)")


def run(args) -> int:
    from tandem.io.run_lock import check_out_file
    from tandem_eval.paper.paper_table import parse_checkpoints

    check_out_file(args.out)
    results = [load_checkpoint(label, path) for label, path in parse_checkpoints(args.checkpoint)]
    for path in passk_figure(results, args.out, args.resamples, args.seed):
        print(f"wrote {path}")
    transfer = Path(args.out).with_name(Path(args.out).name + "-transfer")
    for path in transfer_figure(results, transfer, args.resamples, args.seed):
        print(f"wrote {path}")
    return 0


main = tool.entry(__name__)  # main(argv=None) -> exit status: parse, run, one-line errors


if __name__ == "__main__":
    sys.exit(main())
