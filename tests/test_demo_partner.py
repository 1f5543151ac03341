"""The partner experiment on the embedded demo (`tandem-rlvr demo --partner ...`).

Each variant is the demo's TRL (or GRPO) config with exactly one thing changed; the table
compares every senior with GRPO and with the paper's TRL, paired over the same problems.
One quick end-to-end run trains two variants and writes the table.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tandem.io.config_files import config_diff, config_to_dict
from tandem.errors import TandemError
from tandem.rewards.transfer_config import PROJECT_VARIANT, TransferConfig
from tandem_app.commands.cli import main
from tandem_app.experiments.partner_variants import RLTR_PLUS_ONE_RULE, RLTR_WEIGHTS
from tandem_app.experiments.demo import demo_config, train_config
from tandem_app.experiments.partner_demo import (
    EMA,
    LABELS,
    SCORE_WEIGHT,
    SYNC,
    TRANSFER_WEIGHT,
    VARIANTS,
    paired_rows,
    write_partner_table,
    run_partner_experiment,
    variant_config,
    weak_sft_config,
)

CHANGED = {
    "weaker": ["tandem.junior_model"],
    "sync": ["tandem.junior_update"],
    "ema": ["tandem.junior_update"],
    "all_tokens": ["loss.loss_denominator"],  # the release's denominator (the strict config's arm)
    "score": ["partner_reward.target", "partner_reward.weight"],
    "grpo_score": ["method", "partner_reward.target", "partner_reward.weight"],
    "grpo_answer_score": ["method", "partner_reward.weight"],  # target `answer` is the default
    # the ablation: grpo_answer_score with one pair of RLT's terms at 0
    "grpo_answer_kl_only": ["method", "partner_reward.logprob_mean", "partner_reward.logprob_min", "partner_reward.weight"],
    "grpo_answer_target_only": ["method", "partner_reward.kl_max", "partner_reward.kl_mean", "partner_reward.weight"],
    # the project's variant of RLTR's transfer reward, kept as it ran (issue 48)
    "transfer": ["partner_reward.kind", "partner_reward.transfer.cut_rule", "partner_reward.transfer.receiver_budget",
                 "partner_reward.transfer.skip_no_room", "partner_reward.transfer.skip_undetermined",
                 "partner_reward.weight"],
    "grpo_transfer": ["method", "partner_reward.kind", "partner_reward.transfer.cut_rule",
                      "partner_reward.transfer.receiver_budget", "partner_reward.transfer.skip_no_room",
                      "partner_reward.transfer.skip_undetermined", "partner_reward.weight"],
    # RLTR's own transfer reward: its preset's defaults, at each weight
    **{n: ["method", "partner_reward.kind", "partner_reward.preset", "partner_reward.weight"] for n in RLTR_WEIGHTS},
    # RLTR's transfer reward with one of the variant's rules (no preset: the section is written out)
    "grpo_rltr_cut": ["method", "partner_reward.kind", "partner_reward.transfer.cut_rule", "partner_reward.weight"],
    "grpo_rltr_skips": ["method", "partner_reward.kind", "partner_reward.transfer.skip_no_room",
                        "partner_reward.transfer.skip_undetermined", "partner_reward.weight"],
    "grpo_rltr_rest": ["method", "partner_reward.kind", "partner_reward.transfer.receiver_budget", "partner_reward.weight"],
    # RLT's setting: the warmed-up writer, its sampling (RLT's temperature, a budget for the longest solution)
    # and RLT's reward: several things by design, each one of RLT's (tests/test_rlt_setting.py)
    "rlt": ["method", "model", "partner_reward.format_penalty", "partner_reward.student", "partner_reward.target",
            "partner_reward.verifier_weight", "partner_reward.weight", "partner_reward.writer_sees_solution",
            "sampling.max_new_tokens", "sampling.temperature"],
}


@pytest.mark.parametrize("name", VARIANTS)
def test_each_variant_changes_one_thing_of_the_demos_trl_run(name):
    cfg, seed_dir = demo_config(), Path("runs/x/seed-0")
    trl = config_to_dict(train_config(cfg, seed_dir, "tandem"))
    variant = config_to_dict(variant_config(cfg, seed_dir, name))
    assert [k for k in config_diff(trl, variant) if k != "out"] == CHANGED[name]
    assert variant["out"].endswith(f"partner-{name}")
    if name in ("sync", "ema"):
        assert variant["tandem"]["junior_update"] == {"sync": SYNC, "ema": EMA}[name]
    if name.endswith("score"):
        assert variant["partner_reward"]["weight"] == SCORE_WEIGHT
        assert variant["partner_reward"]["target"] == ("answer" if name == "grpo_answer_score" else "solution")
    if name.startswith("grpo_answer_"):
        assert variant["partner_reward"]["weight"] == SCORE_WEIGHT and variant["partner_reward"]["target"] == "answer"
    if name.endswith("transfer"):  # the project's variant: its cut rule, skips and receiver budget
        assert variant["partner_reward"]["weight"] == TRANSFER_WEIGHT
        assert variant["partner_reward"]["transfer"] == {"cuts": [], "samples": 1, "receiver": "", **PROJECT_VARIANT}
    if name in RLTR_WEIGHTS:  # RLTR's definition: the transfer section left at its (RLTR's) defaults
        rltr = variant_config(cfg, seed_dir, name).partner_reward
        assert rltr.weight == RLTR_WEIGHTS[name] and rltr.transfer == TransferConfig() and rltr.transfer.is_rltr
    if name in RLTR_PLUS_ONE_RULE:  # RLTR (w = 0.5) but for the one rule, which is the variant's own value
        got = variant_config(cfg, seed_dir, name).partner_reward
        rules = RLTR_PLUS_ONE_RULE[name]
        assert got.weight == RLTR_WEIGHTS["grpo_rltr"] and got.transfer == TransferConfig(**rules)
        assert rules == {k: PROJECT_VARIANT[k] for k in rules} and not got.transfer.is_rltr
    assert variant["partner_reward"]["writer_sees_solution"] == (name == "rlt")  # RLT's setting: the writer sees it
    assert name in LABELS


@pytest.mark.parametrize("name, zeroed, kept", [("grpo_answer_kl_only", ("logprob_mean", "logprob_min"), ("kl_mean", "kl_max")),
                                                ("grpo_answer_target_only", ("kl_mean", "kl_max"), ("logprob_mean", "logprob_min"))])
def test_each_ablation_zeroes_one_pair_of_rlts_terms_and_keeps_the_others_coefficients(name, zeroed, kept):
    score = variant_config(demo_config(), Path("runs/x/seed-0"), "grpo_answer_score").partner_reward.coefficients()
    ablated = variant_config(demo_config(), Path("runs/x/seed-0"), name).partner_reward.coefficients()
    assert all(ablated[t] == 0.0 and score[t] > 0.0 for t in zeroed)
    assert all(ablated[t] == score[t] > 0.0 for t in kept)


def test_the_weaker_junior_is_the_bases_sft_stopped_at_a_quarter():
    cfg = demo_config()
    weak = weak_sft_config(cfg, Path("runs/x/seed-0"))
    assert weak.steps == cfg.sft.steps // 4 and weak.seed == cfg.seed and weak.out.endswith("sft-weak")


def test_paired_rows_are_problem_by_problem_differences():
    results = {
        "grpo": {"solo_counts": [0, 4], "solo_n": 4, "handoff_counts": [0, 0], "handoff_n": 4,
                 "weak_handoff_counts": [2, 2], "weak_handoff_n": 4},
        "tandem": {"solo_counts": [4, 4], "solo_n": 4, "handoff_counts": [2, 4], "handoff_n": 4,
                   "weak_handoff_counts": [2, 2], "weak_handoff_n": 4},
    }
    rows = paired_rows(results, "grpo")["tandem"]
    assert rows["solo"] == pytest.approx((0.5, 0.5)) and rows["handoff to base"] == pytest.approx((0.75, 0.25))
    assert rows["handoff to weaker junior"] == (0.0, 0.0)


def _seed_results(grpo_handoff: list[int], drift: float) -> dict:
    row = {"solo_acc": 0.5, "handoff_acc": 0.5, "weak_handoff_acc": 0.5, "junior_ce": 0.1, "solo_terse_share": 0.0,
           "solo_counts": [2, 2], "solo_n": 4, "handoff_counts": [2, 2], "handoff_n": 4,
           "weak_handoff_counts": [2, 2], "weak_handoff_n": 4, "drift_js_vs_base": 0.01}
    return {"tandem": row, "grpo": {**row, "handoff_counts": grpo_handoff, "drift_js_vs_base": drift}}


def test_the_table_gives_each_difference_per_seed_and_its_mean_and_se_over_seeds(tmp_path):
    # GRPO - TRL, handoff: seed 0 -0.25 (problems -0.5, 0), seed 1 -0.5 (both -0.5) -> mean -0.375, SE 0.125
    per_seed = {0: _seed_results([0, 2], 0.05), 1: _seed_results([0, 0], 0.03)}
    table = write_partner_table(tmp_path, [0, 1], per_seed).read_text()
    handoff = table.split("## handoff to base: senior - TRL (frozen base), paired")[1]
    # over 2 seeds the 95% interval is mean ± t(1) SE = ± 12.706 * 0.125, not ± 1.96 SE
    assert "| GRPO | -0.250 ± 0.250 | -0.500 ± 0.000 | -0.375 ± 0.125, 95% t(1) [-1.963, +1.213] |" in handoff
    drift = table.split("## drift vs base, bits: senior - TRL (frozen base), same seed")[1]
    assert "| GRPO | +0.0400 | +0.0200 | +0.0300 ± 0.0100, 95% t(1) [-0.0971, +0.1571] |" in drift
    saved = json.loads((tmp_path / "partner.json").read_text())["paired"]
    assert saved["grpo-tandem/drift_js_vs_base"] == pytest.approx([0.04, 0.02])


def test_an_unknown_variant_is_refused_before_any_work(tmp_path):
    with pytest.raises(TandemError, match="unknown partner variant 'weak'; choose from weaker, sync"):
        run_partner_experiment([0], tmp_path, ["weak"])
    assert not any(tmp_path.iterdir())


def test_a_quick_partner_run_trains_two_variants_and_writes_the_table(quick_demo, tmp_path):
    """On a copy of the session's quick demo (seed 0), whose finished phases the partner run reuses."""
    shutil.copytree(quick_demo, tmp_path / "seed-0")
    trained = json.loads((quick_demo / "timings.json").read_text())
    assert main(["demo", "--quick", "--out", str(tmp_path), "--partner", "weaker", "ema", "--no-progress"]) == 0
    assert json.loads((tmp_path / "seed-0" / "timings.json").read_text()) == trained  # the demo was not retrained
    table = (tmp_path / "partner.md").read_text()
    for needle in ("## handoff to weaker junior", "TRL, weaker junior", f"TRL, {EMA}", "senior - GRPO, paired"):
        assert needle in table
    results = json.loads((tmp_path / "seed-0" / "partner-eval" / "results.json").read_text())
    assert set(results) == {"grpo", "tandem", "weaker", "ema", "_meta"}
    for name in ("grpo", "tandem", "weaker", "ema"):
        r = results[name]
        assert 0 <= r["weak_handoff_acc"] <= 1 and 0 <= r["drift_js_vs_base"] <= 1 and r["junior_ce"] > 0
    state = json.loads((tmp_path / "seed-0" / "partner-ema" / "config.json").read_text())
    assert state["tandem"]["junior_update"] == EMA


def test_the_one_rule_arms_split_the_projects_variant_into_its_rules_and_cover_it():
    """Together the one-rule arms add every rule of the variant, each exactly once."""
    keys = [k for rules in RLTR_PLUS_ONE_RULE.values() for k in rules]
    assert sorted(keys) == sorted(PROJECT_VARIANT) and len(set(keys)) == len(keys)
