"""The demo's report: `report.md` with the numbers, the verdict on each target, sample responses, figures.

Verdicts come from `findings` (paired comparisons over the same test problems, drift
against the base's sampling-noise floor), never from the claim.
"""

from __future__ import annotations

import json
from pathlib import Path

from tandem.io.metric_log import REWARD_MEAN, SFT_VAL_ACCURACY, TERSE_FRACTION, VAL_ACCURACY, read_metrics
from tandem_app.experiments.findings import findings, targets_summary, verdict
from tandem_app.stats import accuracy

NAMES = {"base": "base (SFT, pre-RL)", "grpo": "GRPO senior", "tandem": "TRL senior"}
MODEL_DIRS = {"base": "sft/model", "grpo": "grpo/model", "tandem": "tandem/model"}  # each model's folder under OUT
LABELS = {"grpo": "GRPO", "tandem": "TRL"}  # the paper's names


def per_problem_se(r: dict, mode: str) -> float:
    return accuracy(r[f"{mode}_counts"], r[f"{mode}_n"])[1]


def _metrics(out: Path, method: str) -> list[dict]:
    """The run's metrics rows as flat dicts, whichever form its `metrics.jsonl` was written in."""
    path = out / method / "metrics.jsonl"
    return [{"step": step, **m} for step, m in read_metrics(path)] if path.is_file() else []


SMOOTH = 5  # the reward curve's running mean: the last SMOOTH steps
# One style per method: where the two curves are equal, TRL's dashes and crosses lie over
# GRPO's solid line and circles and both stay visible.
STYLES = {"grpo": {"color": "tab:blue", "linestyle": "-", "marker": "o"},
          "tandem": {"color": "tab:orange", "linestyle": "--", "marker": "x"}}


def _smooth(values: list[float], k: int = SMOOTH) -> list[float]:
    return [sum(values[max(0, i - k + 1) : i + 1]) / len(values[max(0, i - k + 1) : i + 1]) for i in range(len(values))]


def reward_figure(out: Path):
    """Training reward (per step and its running mean), terse steps and validation accuracy of both runs in `out`."""
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    fig = Figure(figsize=(14, 3.8))
    ax1, ax2, ax3 = fig.subplots(1, 3)
    for method, style in STYLES.items():
        label = LABELS[method]
        rows = _metrics(out, method)
        train = [r for r in rows if REWARD_MEAN in r]
        steps, rewards = [r["step"] for r in train], [r[REWARD_MEAN] for r in train]
        # A running mean only over a run longer than its window: over fewer steps it would be mislabelled.
        smoothed = len(rewards) > SMOOTH
        ax1.plot(steps, rewards, **style, alpha=0.45 if smoothed else 1.0, linewidth=1, markersize=5,
                 label=f"{label}, per step")
        if smoothed:
            ax1.plot(steps, _smooth(rewards), **{**style, "marker": None}, linewidth=2,
                     label=f"{label}, mean of the last {SMOOTH} steps")
        terse = [r for r in train if TERSE_FRACTION in r]
        shares = [r[TERSE_FRACTION] for r in terse]
        ax2.plot([r["step"] for r in terse], _smooth(shares) if len(shares) > SMOOTH else shares, **style,
                 markersize=4, label=f"{label}, mean of the last {SMOOTH} steps" if len(shares) > SMOOTH
                 else f"{label}, per step")
        val = [r for r in rows if VAL_ACCURACY in r]
        if val:
            ax3.plot([r["step"] for r in val], [r[VAL_ACCURACY] for r in val], **style, label=label)
    if not ax3.get_lines():  # no validation in these runs (val_every=0): say so rather than draw empty axes
        ax3.text(0.5, 0.5, "no validation in these runs (val_every=0)", ha="center", va="center",
                 transform=ax3.transAxes)
    ax1.set(title="training reward (TRL: team of senior + junior)", xlabel="step", ylabel="mean reward")
    ax2.set(title="terse steps in training rollouts", xlabel="step", ylabel="share of steps", ylim=(-0.02, 1.02))
    ax3.set(title="validation: senior solo, greedy, RL budget", xlabel="step", ylabel="accuracy")
    for ax in (ax1, ax2, ax3):
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
        ax.grid(alpha=0.3)
        if ax.get_lines():
            ax.legend(fontsize="small")
    fig.tight_layout()
    return fig


def plot_reward_curves(out: Path, path: Path) -> None:
    reward_figure(out).savefig(path, dpi=120)


def has_accuracy(res: dict) -> bool:
    """True when some model solves something: an all-zero bar chart is only its labels."""
    return any(res[n][f"{m}_acc"] > 0 for n in ("base", "grpo", "tandem") for m in ("solo", "handoff"))


def plot_accuracy_bars(res: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["base", "grpo", "tandem"]
    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    width = 0.38
    for j, (mode, color) in enumerate((("solo", "tab:green"), ("handoff", "tab:purple"))):
        xs = [i + (j - 0.5) * width for i in range(len(names))]
        ys = [res[n][f"{mode}_acc"] for n in names]
        errs = [per_problem_se(res[n], mode) for n in names]
        ax.bar(xs, ys, width, yerr=errs, capsize=3, color=color, label=mode)
        for x, y, e in zip(xs, ys, errs):
            ax.text(x, y + e + 0.01, f"{y:.3f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(names)), [NAMES[n] for n in names], fontsize=8)
    ax.set(ylabel="accuracy (test, sampled)", title="solo vs handoff (junior = base, switch at each step)")
    ax.set_ylim(0, min(1.05, max(res[n][f"{m}_acc"] for n in names for m in ("solo", "handoff")) * 1.25 + 0.05))
    ax.legend(loc="lower right")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def results_table(res: dict) -> list[str]:
    ks = sorted({int(k.split("@")[1]) for k in res["base"] if k.startswith("solo_pass@")})
    head = ["model", "solo acc", "handoff acc"] + [f"solo pass@{k}" for k in ks]
    head += ["terse steps (solo)", "drift: JS vs base (bits)", "junior CE on solo (nats/tok)", "solo resp. len"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name in ("base", "grpo", "tandem"):
        r = res[name]
        cells = [
            NAMES[name],
            f"{r['solo_acc']:.3f} ± {per_problem_se(r, 'solo'):.3f}",
            f"{r['handoff_acc']:.3f} ± {per_problem_se(r, 'handoff'):.3f}",
        ]
        cells += [f"{r[f'solo_pass@{k}']:.3f}" for k in ks]
        floor = " (noise floor)" if name == "base" else ""
        cells += [
            f"{r['solo_terse_share']:.0%}",
            f"{r['drift_js_vs_base']:.4f}{floor}",
            f"{r['junior_ce_on_solo']:.4f}",
            f"{r['solo_response_len']:.1f}",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def target_lines(res: dict) -> list[str]:
    """The targets' section: the count of met targets (naming those not met), then each target with the numbers
    behind its verdict and the verdict in words."""
    found = findings(res)
    return [f"**{targets_summary(found)}.**", "",
            *[f"- **{f.title}**: {f.text} — **{verdict(f)}**" for f in found]]


def model_folders(out: Path) -> list[str]:
    """One line per model: its name and its Hugging Face folder (what `eval-solo --model` takes)."""
    return [f"{NAMES[name]}: {Path(out) / d}" for name, d in MODEL_DIRS.items()]


def console_summary(out: Path) -> str:
    """What the demo prints at its end: solo and handoff accuracy per model, the model folders, the report."""
    res = json.loads((Path(out) / "eval" / "results.json").read_text())
    rows = [f"{'model':<20} {'solo acc':>15} {'handoff acc':>15}"]
    for name in MODEL_DIRS:
        r = res[name]
        rows.append(f"{NAMES[name]:<20} {r['solo_acc']:>7.3f} ± {per_problem_se(r, 'solo'):.3f} "
                    f"{r['handoff_acc']:>7.3f} ± {per_problem_se(r, 'handoff'):.3f}")
    legend = (f"accuracy over {res['_meta']['n_problems']} test problems x {res['_meta']['eval']['n_samples']} "
              "samples, ± one standard error over problems; handoff = senior and the base alternate steps")
    targets = f"targets: {targets_summary(findings(res))} (each verdict with its numbers: report.md)"
    return "\n".join([*rows, legend, targets, "models:", *(f"  {line}" for line in model_folders(out)),
                      f"report: {Path(out) / 'report.md'}"])


MECHANISM = (
    "**The mechanism, in two sentences.** Under the RL response budget the terse net-change notation wins alone "
    "(a terse solution always fits, a verbose one often does not), so the GRPO senior moves to it. The junior "
    "(the base) often drops out of the terse notation and then misreads the net change as the total, so for a "
    "TRL team, whose junior writes half the words, the terse notation loses and the TRL senior keeps the "
    "verbose one, which the junior continues correctly when it takes over in the handoff."
)


def sample_responses(res: dict, index: int = 0) -> list[str]:
    """The first test problem's first solo response of each model, and the seniors' handoff ones."""
    ex = {name: res[name]["examples"][index] for name in ("base", "grpo", "tandem")}
    lines = [
        f"The first test problem (not selected): *{ex['base']['problem']}* (answer {ex['base']['answer']}). "
        "Each model's first sampled solo response:",
        "",
    ]
    for name in ("base", "grpo", "tandem"):
        lines += [f"**{NAMES[name]}**, solo:", "", "```", ex[name]["solo"], "```", ""]
    lines += ["The same problem in the handoff (senior first, then the junior, step by step):", ""]
    for name in ("grpo", "tandem"):
        steps = [f"{author:>6}: {step}" for author, step in handoff_steps(ex[name].get("handoff", []))]
        lines += [f"**{NAMES[name]}** + junior:", "", "```", *steps, "```", ""]
    return lines


def handoff_steps(runs: list[list]) -> list[tuple[str, str]]:
    """(author, step) pairs from a handoff response's [author, text] runs (a step has one author)."""
    steps = []
    for author, text in runs:
        steps += [(author, s.strip()) for s in text.split("\n\n") if s.strip()]
    return steps


def quick_note(cfg: dict) -> list[str]:
    """The quick preset's caveat: what it shrinks, and that it shows RL moving the base, not the findings."""
    task = cfg["task"]
    steps = (f"{task['min_steps']}" if task["min_steps"] == task["max_steps"]
             else f"{task['min_steps']}-{task['max_steps']}")
    layers = cfg.get("model", {}).get("num_hidden_layers")
    return [f"**Quick preset:** {f'a {layers}-layer model, ' if layers else ''}{steps}-step problems (start <= "
            f"{task['max_start']}, changes <= {task['max_operand']}), {cfg['sft']['steps']} SFT steps and "
            f"{cfg['train']['steps']} RL steps. It shows RL moving the base; the findings' verdicts are not "
            "meaningful here (short problems fit the RL response budget in either notation, so the trade-off "
            "behind findings 2 and 3 is absent). Run the full demo for those.", ""]


def write_report(out: Path, timings: dict) -> Path:
    """Write OUT/report.md and its figures from the phases' outputs; return the report's path."""
    out = Path(out)
    res = json.loads((out / "eval" / "results.json").read_text())
    cfg = json.loads((out / "demo_config.json").read_text())
    sft = json.loads((out / "sft" / "summary.json").read_text())
    plot_reward_curves(out, out / "reward_curves.png")
    (out / "accuracy_bars.png").unlink(missing_ok=True)  # a rerun's results may no longer fill it
    if has_accuracy(res):
        plot_accuracy_bars(res, out / "accuracy_bars.png")
    meta, demos, rl = res["_meta"], cfg["demos"], cfg["train"]
    lines = [
        "# Tandem RL demo: the paper's findings in miniature",
        "",
        *(quick_note(cfg) if cfg.get("quick") else []),
        f"Seed {cfg['seed']}. A tiny Qwen3-config model is fine-tuned ({cfg['sft']['steps']} SFT steps) on a "
        "demonstrator's worked solutions into the pre-RL base. The demonstrator starts a solution in the terse "
        f"net-change notation with probability {demos['terse_prob']}, else in the verbose running-total one; "
        f"after each terse step it drops back to the verbose notation with probability "
        f"{1 - demos['terse_keep_prob']:.1f} and then misreads the net change as the total with probability "
        f"{demos['misread_prob']} (its only error). The base is trained for {rl['steps']} GRPO steps "
        f"({rl['prompts_per_step']} prompts x {rl['group_size']} responses, {rl['ppo_mini_batches']} PPO "
        f"mini-batches, lr {rl['lr']}, response budget {rl['sampling']['max_new_tokens']} tokens) two ways with the same "
        "seed, problems and hyper-parameters: **TRL** (every rollout co-written with the frozen base as junior, "
        "authorship redrawn at word boundaries, p = 0.5, at most 32 tokens between redraws; loss on senior tokens "
        "only) and **GRPO** (solo rollouts).",
        "",
        MECHANISM,
        "",
        f"Evaluation (eval suite `tandem_eval`, reference engine): {meta['n_problems']} held-out test problems, "
        f"{meta['eval']['n_samples']} samples each (temperature {meta['eval']['sampling']['temperature']}, "
        f"top-p {meta['eval']['sampling']['top_p']}, top-k {meta['eval']['sampling']['top_k']}, up to "
        f"{meta['eval']['sampling']['max_new_tokens']} tokens). "
        "*Solo*: the senior alone. *Handoff*: senior and junior (the base) alternate at every reasoning step "
        "(blank line), senior first. *Terse steps*: the share of the solo responses' steps written in the terse "
        "notation. *Drift*: Jensen-Shannon divergence between the unigram token distributions of the senior's "
        "and the base's solo responses; for the base, a second, independent sample set of the base against the "
        "first (the sampling-noise floor). *Junior CE*: the junior's cross-entropy on the senior's solo "
        "responses (lower = more legible to the junior). ± values are standard errors over problems; "
        "differences are paired over the same problems.",
        "",
        f"Base after SFT: validation greedy accuracy {sft[SFT_VAL_ACCURACY]:.3f}.",
        "",
        "## Results",
        "",
        *results_table(res),
        "",
        "## The targets",
        "",
        *target_lines(res),
        "",
        "## Sample responses",
        "",
        *sample_responses(res),
        "![reward curves](reward_curves.png)",
        "",
        "![solo vs handoff accuracy](accuracy_bars.png)" if has_accuracy(res) else
        "No accuracy chart: every model's solo and handoff accuracy is 0.",
        "",
        "## Models",
        "",
        *[f"- {line}" for line in model_folders(out)],
        "",
        "## Time per phase (seconds)",
        "",
        "| phase | seconds |",
        "|---|---|",
        *[f"| {k} | {v:.1f} |" for k, v in timings.items()],
        "",
        "Caveats: a ~0.85M-parameter model and a synthetic task built so that the paper's mechanism has a toy "
        "analogue (see `model_spec/DEMO_DESIGN.md`); the numbers show the direction of the effects, not the "
        "paper's magnitudes.",
        "",
    ]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
