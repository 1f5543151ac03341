"""`summary.json` of a distillation: accuracy before and after, the paired gain with its SE, the traces' counts.

The gain is paired over test problems: each problem's mean correctness after minus
before (the same problems, request keys and sampling both times), averaged; its SE is
the sample standard deviation of those differences over sqrt(n problems).
"""

from __future__ import annotations

from tandem_app.stats import paired_difference


def paired_gain(before: list[int], after: list[int], n_samples: int) -> tuple[float, float | None]:
    """(mean of the per-problem differences, its standard error; None with one problem)."""
    gain, se = paired_difference(after, n_samples, before, n_samples)  # the demo's one paired statistic
    return gain, (se if len(before) > 1 else None)


def build_summary(cfg, meta: dict, before: dict, after: dict, seconds: dict, student_model: str) -> dict:
    gain, se = paired_gain(before["counts"], after["counts"], cfg.n_samples)
    return {
        "teacher": cfg.teacher,
        "student": cfg.student,
        "student_after": student_model,
        "data": cfg.data,
        "seed": cfg.seed,
        "accuracy_before": before["accuracy"],
        "accuracy_after": after["accuracy"],
        "gain": gain,
        "gain_se": se,
        "n_eval_problems": len(before["counts"]),
        "n_samples": cfg.n_samples,
        "n_traces": meta["n_traces"],
        "trace_tokens": meta["trace_tokens"],
        "token_budget": cfg.token_budget,
        "traces_correct_fraction": meta["traces_correct_fraction"],
        "teacher_correct_fraction": meta["n_correct"] / max(1, meta["n_problems_read"]),
        "n_problems_read": meta["n_problems_read"],
        "dropped_incorrect": meta["dropped_incorrect"],
        "dropped_too_long": meta["dropped_too_long"],
        "cut_too_long": meta["cut_too_long"],
        "only_correct": cfg.only_correct,
        "writer_sees_solution": cfg.writer_sees_solution,
        "backend": cfg.backend,
        "sft_backend": cfg.sft_backend,
        "sft_steps": cfg.steps,
        "seconds": seconds,
    }


def final_line(summary: dict) -> str:
    se = "n/a" if summary["gain_se"] is None else f"{summary['gain_se']:.3f}"
    return (f"distill: student solo accuracy {summary['accuracy_before']:.3f} -> {summary['accuracy_after']:.3f}, "
            f"gain {summary['gain']:+.3f} ± {se} (paired SE, {summary['n_eval_problems']} problems x "
            f"{summary['n_samples']} samples); {summary['n_traces']} traces, {summary['trace_tokens']} tokens; "
            f"student in {summary['student_after']}")
