"""pass@k curves per benchmark for several checkpoints (the paper's Figure 2 / 3 style).

Each `--run LABEL=PATH` names an eval output directory (or its `summary.json`); solo runs
are drawn solid and handoff runs dashed, one colour per label, one panel per benchmark,
k on a log2 axis. Writes a PNG with matplotlib's Agg backend (no display needed).

    python -m tandem_eval.paper.plot --run base=runs/solo-base --run tandem=runs/solo-tandem \\
        --run base=runs/handoff-base --run tandem=runs/handoff-tandem --out passk.png
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tandem.errors import TandemError
from tandem.io.jsonl import read_json
from tandem_eval.core import tool


def load_summary(path: str | Path) -> dict:
    path = Path(path)
    file = path / "summary.json" if path.is_dir() else path
    if not file.is_file():
        raise TandemError(f"{file}: no such file; pass an eval output directory holding summary.json")
    summary = read_json(file, "re-run the evaluation")
    if not isinstance(summary.get("benchmarks"), dict) or not isinstance(summary.get("ks"), list):
        raise TandemError(f"{file}: not an eval summary (no 'benchmarks'/'ks'); pass the summary.json of eval_solo "
                          "or eval_sentence_handoff")
    return summary


def parse_run(spec: str) -> tuple[str, str]:
    label, sep, path = spec.partition("=")
    if not sep or not label or not path:
        raise TandemError(f"bad --run {spec!r}; write LABEL=PATH, e.g. --run tandem=runs/solo-step120")
    return label, path


def plot_pass_at_k(runs: list[tuple[str, dict]], out: Path, benchmarks: list[str] | None = None, title: str = "") -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = benchmarks or list(dict.fromkeys(b for _, s in runs for b in s["benchmarks"]))
    if not names:
        raise TandemError("the summaries hold no benchmark to plot")
    labels = list(dict.fromkeys(label for label, _ in runs))
    colours = {label: plt.get_cmap("tab10")(i % 10) for i, label in enumerate(labels)}
    fig, axes = plt.subplots(1, len(names), figsize=(4.2 * len(names), 3.6), squeeze=False)
    for ax, name in zip(axes[0], names):
        for label, summary in runs:
            scores = summary["benchmarks"].get(name)
            if scores is None:
                continue
            ks = [k for k in summary["ks"] if f"pass@{k}" in scores]
            style = "--" if summary.get("phase") == "handoff" else "-"
            ax.plot(ks, [scores[f"pass@{k}"] for k in ks], style, marker="o", ms=3, color=colours[label],
                    label=f"{label} ({summary.get('phase', '?')})")
        ax.set_xscale("log", base=2)
        all_ks = sorted({k for _, s in runs if name in s["benchmarks"] for k in s["ks"]})
        ax.set_xticks(all_ks, [str(k) for k in all_ks])
        ax.set_title(name)
        ax.set_xlabel("k")
        ax.set_ylabel("pass@k")
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=150)
    plt.close(fig)
    return out


DESCRIPTION = (
    "Draw pass@k curves (log2 k axis), one panel per benchmark, from eval summary JSONs. "
    "Solo runs are solid lines, handoff runs dashed; runs with the same label share a colour."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", action="append", required=True, metavar="LABEL=PATH",
                   help="a checkpoint's eval output directory or summary.json, with its legend label; repeat")
    p.add_argument("--out", required=True, type=Path, help="PNG file to write")
    p.add_argument("--benchmarks", default=None, help="comma-separated benchmarks to draw (default: all found)")
    p.add_argument("--title", default="", help="figure title")


def run(args) -> int:
    from tandem.io.run_lock import check_out_file

    check_out_file(args.out)
    runs = [(label, load_summary(path)) for label, path in map(parse_run, args.run)]
    benchmarks = [b for b in args.benchmarks.split(",") if b] if args.benchmarks else None
    if benchmarks:
        missing = [b for b in benchmarks if not any(b in s["benchmarks"] for _, s in runs)]
        if missing:
            raise TandemError(f"no run has benchmark(s) {missing}; drop them from --benchmarks")
    print(f"wrote {plot_pass_at_k(runs, args.out, benchmarks, args.title)}")
    return 0


main = tool.entry(__name__)  # main(argv=None) -> exit status: parse, run, one-line errors


if __name__ == "__main__":
    sys.exit(main())
