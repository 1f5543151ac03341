"""The partner experiment's variants by name, torch-free, so that `demo --partner` refuses an unknown one
before the pipeline's imports (`tandem_app/experiments/partner_demo.py` trains them)."""

from __future__ import annotations

from tandem.errors import TandemError

# The ablation of the validated score (issue 63): GRPO + score (answer) with one of RLT's two term pairs at 0
ABLATIONS = ("grpo_answer_kl_only", "grpo_answer_target_only")
VARIANTS = ("weaker", "sync", "ema", "score", "grpo_score", "grpo_answer_score", *ABLATIONS, "rlt", "transfer",
            "grpo_transfer")
GRPO_VARIANTS = ("grpo_score", "grpo_answer_score", *ABLATIONS, "rlt", "grpo_transfer")  # GRPO's config with one thing changed; the rest TRL's


def check_variants(names: list[str]) -> None:
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        raise TandemError(f"unknown partner variant {unknown[0]!r}; choose from {', '.join(VARIANTS)}")
