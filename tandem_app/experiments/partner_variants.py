"""The partner experiment's variants by name, torch-free, so that `demo --partner` refuses an unknown one
before the pipeline's imports (`tandem_app/experiments/partner_demo.py` trains them)."""

from __future__ import annotations

from tandem.errors import TandemError

# The ablation of the validated score (issue 63): GRPO + score (answer) with one of RLT's two term pairs at 0
ABLATIONS = ("grpo_answer_kl_only", "grpo_answer_target_only")
# GRPO + RLTR's own transfer reward (partner_reward.preset=rltr) at each weight w (issue 63)
RLTR_WEIGHTS = {"grpo_rltr": 0.5, "grpo_rltr_w0.25": 0.25, "grpo_rltr_w1": 1.0}
# GRPO + RLTR's transfer reward (w = 0.5) with one of the project's variant's rules added (issue 63): which
# rule kept the variant from buying handoff. The keys are `TransferConfig`'s; the rest is RLTR's.
RLTR_PLUS_ONE_RULE = {"grpo_rltr_cut": {"cut_rule": "before_answer"},
                      "grpo_rltr_skips": {"skip_undetermined": True, "skip_no_room": True},
                      "grpo_rltr_rest": {"receiver_budget": "rest"}}
# TRL with the release's loss denominator (every response token, junior ones included; the demo divides by
# the senior's tokens): the strict-config arm of 2026-11-24, regenerated for issue 63
DENOMINATORS = {"all_tokens": "all_response_tokens"}
VARIANTS = ("weaker", "sync", "ema", *DENOMINATORS, "score", "grpo_score", "grpo_answer_score", *ABLATIONS, "rlt",
            "transfer", "grpo_transfer", *RLTR_WEIGHTS, *RLTR_PLUS_ONE_RULE)
GRPO_VARIANTS = ("grpo_score", "grpo_answer_score", *ABLATIONS, "rlt", "grpo_transfer", *RLTR_WEIGHTS,
                 *RLTR_PLUS_ONE_RULE)  # GRPO's config with one thing changed; the rest TRL's


def check_variants(names: list[str]) -> None:
    unknown = [v for v in names if v not in VARIANTS]
    if unknown:
        raise TandemError(f"unknown partner variant {unknown[0]!r}; choose from {', '.join(VARIANTS)}")
