"""Training curves from a run's metric log, and the best-checkpoint rule.

Input: a metrics JSONL in either row form, read by `tandem.io.metric_log.read_metrics`: the
one verl's `file` logger writes (`trainer.logger=[console,file]`; one line per step,
`{"step": s, "data": {metric: value}}`; its path is $VERL_FILE_LOGGER_PATH, else
`<project>/<experiment>.jsonl` under $VERL_FILE_LOGGER_ROOT), or the embedded trainer's
`metrics.jsonl` (`{"step": s, metric: value}`). A name an older run or the release wrote is
read under its present spelling (`tandem.io.legacy.METRIC_NAMES`).
Read from it:
- validation pass@k per data source, averaged over sources (the macro): `pass@k` where a
  metric of that name is logged, else verl's `best@k/mean` (its bootstrap best-of-k
  estimate), and pass@1 from `mean@n`; the accuracy variable `acc` (else `reward`);
- the senior token fraction (`tandem.io.metric_log.SENIOR_TOKEN_FRACTION`), as verl's actor logs
  it (`actor/tandem/`), as a shared log holds it (`tandem/`) or unprefixed (the embedded trainer);
- the mean response length: `response_length/mean`.

    python -m tandem_eval.analysis.training_curves plot --run trl=trl.jsonl --run grpo=grpo.jsonl --out curves
    python -m tandem_eval.analysis.training_curves best-step trl.jsonl --k 4      # prints the step

The best checkpoint is the step with the highest validation macro pass@k (k = 4, the
release's docs' rule); ties go to the earlier step.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from pathlib import Path

from tandem.errors import TandemError
from tandem.io.metric_log import SENIOR_TOKEN_FRACTION, TANDEM_PREFIX, read_metrics
from tandem_eval.core import tool

# The senior token fraction under each prefix a log gives it: verl's actor, a shared log, the embedded trainer.
SENIOR_FRACTION_KEYS = tuple(prefix + SENIOR_TOKEN_FRACTION for prefix in ("actor/" + TANDEM_PREFIX, TANDEM_PREFIX, ""))
LENGTH_KEY = "response_length/mean"
_VAL = re.compile(r"^val-(?:core|aux)/(?P<source>.+)/(?P<var>acc|reward)/(?P<metric>.+)$")

DESCRIPTION = ("Training curves (validation pass@k, senior token fraction, response length) from a metrics log: verl's file "
               "logger or the embedded trainer's metrics.jsonl.")


def _metric_value(metrics: dict[str, float], k: int) -> float | None:
    if f"pass@{k}" in metrics:
        return metrics[f"pass@{k}"]
    if k == 1:
        means = [v for m, v in metrics.items() if re.fullmatch(r"mean@\d+", m)]
        return means[0] if means else None
    return metrics.get(f"best@{k}/mean")


def validation_pass_at_k(rows: list[tuple[int, dict]], k: int) -> dict[int, float]:
    """{step: macro validation pass@k} over the steps that logged it for every data source."""
    out = {}
    for step, data in rows:
        per: dict[str, dict[str, dict[str, float]]] = {}
        for key, value in data.items():
            m = _VAL.match(key)
            if m and isinstance(value, (int, float)):
                per.setdefault(m["source"], {}).setdefault(m["var"], {})[m["metric"]] = float(value)
        values = []
        for variables in per.values():
            metrics = variables.get("acc") or variables.get("reward") or {}
            v = _metric_value(metrics, k)
            if v is not None:
                values.append(v)
        if values and len(values) == len(per):
            out[step] = sum(values) / len(values)
    return out


def series(rows: list[tuple[int, dict]], keys: tuple[str, ...] | str) -> dict[int, float]:
    keys = (keys,) if isinstance(keys, str) else keys
    out = {}
    for step, data in rows:
        for key in keys:
            if isinstance(data.get(key), (int, float)) and not math.isnan(data[key]):
                out[step] = float(data[key])
                break
    return out


def best_step(path: str | Path, k: int = 4) -> tuple[int, float]:
    """(step, its validation macro pass@k) with the highest value; the earliest on ties."""
    val = validation_pass_at_k(read_metrics(path), k)
    if not val:
        raise TandemError(f"{path}: no validation entries with pass@{k} (val-core/<source>/acc/best@{k}/mean or "
                          f"pass@{k}); train with trainer.test_freq > 0 and val_kwargs.n >= {k}")
    step = min(val, key=lambda s: (-val[s], s))
    return step, val[step]


def curves_figure(runs: list[tuple[str, str]], out_stem: str | Path, k: int = 4) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    logs = [(label, read_metrics(path), path) for label, path in runs]
    for label, rows, path in logs:
        if not validation_pass_at_k(rows, 1) and not validation_pass_at_k(rows, k):
            raise TandemError(f"{path}: no validation entries (val-core/... metrics); nothing to draw for {label!r}; "
                              "train with trainer.test_freq > 0")
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
    for label, rows, _ in logs:
        for kk, style in ((1, ":"), (k, "-")):
            v = validation_pass_at_k(rows, kk)
            if v:
                axes[0].plot(list(v), [100 * x for x in v.values()], style, marker="o", ms=3,
                             label=f"{label} pass@{kk}")
        frac = series(rows, SENIOR_FRACTION_KEYS)
        if frac:
            axes[1].plot(list(frac), list(frac.values()), label=label)
        length = series(rows, LENGTH_KEY)
        if length:
            axes[2].plot(list(length), list(length.values()), label=label)
    titles = ("validation macro pass@k (%)", "senior token fraction", "mean response length (tokens)")
    for ax, title in zip(axes, titles):
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
        if ax.lines:
            ax.legend(fontsize=7)
    fig.tight_layout()
    out_stem = Path(out_stem)
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    written = []
    for fmt in ("png", "svg"):
        path = out_stem.with_name(f"{out_stem.name}.{fmt}")
        fig.savefig(path, dpi=150)
        written.append(path)
    plt.close(fig)
    return written


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=DESCRIPTION)
    sub = p.add_subparsers(dest="command", required=True)
    plot = sub.add_parser("plot", help="draw the training curves of one or more runs on one figure")
    plot.add_argument("--run", action="append", required=True, metavar="LABEL=LOG", help="a run's metrics JSONL")
    plot.add_argument("--out", required=True, type=Path, help="output stem: writes STEM.png and STEM.svg")
    plot.add_argument("--k", type=int, default=4, help="validation pass@k drawn beside pass@1 (default: %(default)s)")
    best = sub.add_parser("best-step", help="print the step with the best validation macro pass@k")
    best.add_argument("log", help="a run's metrics JSONL")
    best.add_argument("--k", type=int, default=4, help="the k of the rule (default: %(default)s, the release's)")
    return p


def run(args) -> int:
    if args.command == "best-step":
        step, value = best_step(args.log, args.k)
        print(step)
        print(f"validation macro pass@{args.k} = {value:.4f} at step {step}", file=sys.stderr)
        return 0
    runs = []
    for spec in args.run:
        label, sep, path = spec.partition("=")
        if not sep or not label or not path:
            raise TandemError(f"bad --run {spec!r}; write LABEL=LOG")
        if label in [lbl for lbl, _ in runs]:
            raise TandemError(f"run label {label!r} given twice; give each run its own label")
        runs.append((label, path))
    for path in curves_figure(runs, args.out, args.k):
        print(f"wrote {path}")
    return 0


main = tool.entry(__name__)  # main(argv=None) -> exit status: parse, run, one-line errors


if __name__ == "__main__":
    sys.exit(main())
