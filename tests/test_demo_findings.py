"""The verdict on each demo target, decided from made-up evaluation results, and the seed table."""

from __future__ import annotations

import pytest

from tandem_app.experiments.findings import drift, findings, handoff, rl_learns, solo_match
from tandem_app.experiments.seeds import seed_summary, seed_table, spread


def model(solo: list[int], hand: list[int], js: float = 0.0, n: int = 4) -> dict:
    return {
        "solo_counts": solo, "solo_n": n, "solo_acc": sum(solo) / (n * len(solo)),
        "handoff_counts": hand, "handoff_n": n, "handoff_acc": sum(hand) / (n * len(hand)),
        "drift_js_vs_base": js, "solo_terse_share": 0.5,
    }


def results(base, grpo, trl, js=(0.01, 0.10, 0.02)) -> dict:
    """js: (noise floor, GRPO drift, TRL drift)."""
    return {"base": model(*base, js=js[0]), "grpo": model(*grpo, js=js[1]), "tandem": model(*trl, js=js[2])}


# Ten problems; every senior solves every problem one sample (of 4) more than the base,
# so each paired difference is exactly +0.25 with SE 0.
BASE = ([2] * 10, [2] * 10)
PLUS_ONE = ([3] * 10, [3] * 10)


def test_rl_learns_when_both_seniors_gain_ten_points_beyond_three_se():
    assert rl_learns(results(BASE, PLUS_ONE, PLUS_ONE)).met


def test_rl_learns_fails_when_one_senior_gains_less_than_ten_points():
    # TRL: +1 sample on 3 of 10 problems -> +0.075 (below the 0.10 floor).
    trl = ([3, 3, 3] + [2] * 7, [2] * 10)
    finding = rl_learns(results(BASE, PLUS_ONE, trl))
    assert not finding.met and "TRL - base = +0.075" in finding.text


def test_rl_learns_fails_when_the_gain_is_within_three_se():
    # GRPO: differences +1, +1, +1, -1 (x problems of 4 samples), mean 0.125, SE 0.125 -> 1 SE.
    base = ([2] * 4, [2] * 4)
    grpo = ([4, 4, 4, 0], [2] * 4)
    trl = ([3] * 4, [2] * 4)
    assert not rl_learns(results(base, grpo, trl)).met


def test_solo_match_allows_trl_three_points_below_grpo_but_not_more():
    grpo = ([3] * 100, [3] * 100)
    trl_ok = ([2] * 12 + [3] * 88, [3] * 100)  # 12 problems x -0.25 / 100 = -0.03
    trl_bad = ([2] * 13 + [3] * 87, [3] * 100)  # -0.0325
    base = ([2] * 100, [2] * 100)
    assert solo_match(results(base, grpo, trl_ok)).met
    assert not solo_match(results(base, grpo, trl_bad)).met


def test_handoff_needs_trl_above_grpo_by_more_than_two_se():
    base = ([2] * 4, [2] * 4)
    grpo = ([3] * 4, [1, 1, 1, 1])
    clear = ([3] * 4, [3, 3, 3, 3])  # +0.5 on every problem: SE 0
    noisy = ([3] * 4, [4, 4, 4, 0])  # differences +0.75 x3, -0.25: mean 0.5, SE 0.25 -> exactly 2 SE
    assert handoff(results(base, grpo, clear)).met
    assert not handoff(results(base, grpo, noisy)).met


def test_handoff_is_not_met_when_trl_is_worse():
    assert not handoff(results(BASE, ([3] * 10, [4] * 10), PLUS_ONE)).met


def test_drift_needs_trl_below_grpo_and_grpo_above_the_noise_floor():
    assert drift(results(BASE, PLUS_ONE, PLUS_ONE, js=(0.01, 0.10, 0.02))).met
    assert not drift(results(BASE, PLUS_ONE, PLUS_ONE, js=(0.01, 0.02, 0.10))).met  # TRL drifts more
    assert not drift(results(BASE, PLUS_ONE, PLUS_ONE, js=(0.05, 0.04, 0.02))).met  # GRPO within the floor


def test_findings_come_in_the_report_order():
    keys = [f.key for f in findings(results(BASE, PLUS_ONE, PLUS_ONE))]
    assert keys == ["rl_learns", "solo_match", "handoff", "drift"]


def test_spread_is_the_mean_and_sample_standard_deviation_over_seeds():
    assert spread([0.2, 0.4, 0.6]) == pytest.approx({"mean": 0.4, "sd": 0.2, "min": 0.2, "max": 0.6})


def test_seed_table_counts_each_verdict_over_seeds():
    good = seed_summary(results(BASE, PLUS_ONE, PLUS_ONE))
    bad = seed_summary(results(BASE, PLUS_ONE, PLUS_ONE, js=(0.01, 0.02, 0.10)))
    lines = seed_table({0: good, 1: bad, 2: good})
    row = next(line for line in lines if line.startswith("| 3. TRL drifts less"))
    assert row.endswith("| met | not met | met | 2/3 |")
    assert any(line.startswith("| GRPO solo acc | 0.750 | 0.750 | 0.750 | 0.750 ± 0.000 |") for line in lines)


def test_the_report_counts_the_met_targets_and_says_not_met_beside_each_missed_one():
    from tandem_app.experiments.report import target_lines

    # BASE and PLUS_ONE give every senior the same accuracy: RL learns and TRL matches GRPO solo, but TRL
    # does not hand off better, and with js (floor 0.01, GRPO 0.02, TRL 0.10) TRL drifts more.
    lines = target_lines(results(BASE, PLUS_ONE, PLUS_ONE, js=(0.01, 0.02, 0.10)))
    assert lines[0] == ("**2 of 4 targets met; not met: 2. TRL hands off better than GRPO; "
                        "3. TRL drifts less from the base.**")
    verdicts = {line.split("**")[1]: line.rsplit("— ", 1)[1] for line in lines if line.startswith("- **")}
    assert verdicts == {"RL learns": "**met**", "1. TRL matches GRPO solo": "**met**",
                        "2. TRL hands off better than GRPO": "**not met**",
                        "3. TRL drifts less from the base": "**not met**"}


def test_the_summary_names_no_missed_target_when_all_are_met():
    from tandem_app.experiments.findings import targets_summary

    clear = ([3] * 10, [4] * 10)  # TRL: the same solo gain, a clear handoff gain over GRPO
    assert targets_summary(findings(results(BASE, PLUS_ONE, clear))) == "4 of 4 targets met"


def test_the_console_summary_counts_the_met_targets(tmp_path):
    import json

    from tandem_app.experiments.report import console_summary

    res = results(BASE, PLUS_ONE, PLUS_ONE, js=(0.01, 0.02, 0.10))
    res["_meta"] = {"n_problems": 10, "eval": {"n_samples": 4}}
    (tmp_path / "eval").mkdir()
    (tmp_path / "eval" / "results.json").write_text(json.dumps(res))
    lines = console_summary(tmp_path).splitlines()
    assert any(line.startswith("targets: 2 of 4 targets met; not met: 2. TRL hands off") for line in lines)
    assert lines[-1] == f"report: {tmp_path / 'report.md'}"
