"""Which part of a handoff score is the junior's: the answer visible before the junior's last turn (as the grader
normalises it, digit-bounded, undetermined when too short), the final answer's author, the budget, leak-controlled
pass@k with each problem's own n, and prefix transfer cut before the answer."""

from __future__ import annotations

import json

import pytest

from tandem.errors import TandemError
from tandem.io.jsonl import read_jsonl
from tandem_eval.analysis import prefix_transfer
from tandem_eval.core import leak
from tandem_eval.core.leak import NOT_VISIBLE, UNDETERMINED, VISIBLE
from tandem_eval.MATH import eval_solo, eval_step_handoff
from tandem_eval.core.rows import SampleRow
from authored import JUNIOR, SENIOR, written




@pytest.mark.parametrize("text, shown", [
    ("so 8 + 4 = 12.", True), ("\\boxed{12}", True), ("x12 apples", True), ("she has 120", False),
    ("it is 3.12 now", False), ("it is 12.5 now", False), ("12,000 of them", False), ("1 2", False),
])
def test_numbers_match_with_digit_boundaries(text, shown):
    assert leak.shows_answer(text, leak.gold_key("12")) is shown


def test_the_gold_is_keyed_as_the_grader_normalises_it():
    assert leak.gold_key("$12$") == leak.gold_key("12.") == leak.gold_key("012") == "12"
    assert leak.gold_key("2,125") == "2125" and leak.shows_answer("total 2,125 coins", "2125")
    assert leak.shows_answer("x = \\dfrac{1}{2}", leak.gold_key("\\frac{1}{2}"))
    assert leak.shows_answer("x^{2}+1", leak.gold_key("x^2+1"))


@pytest.mark.parametrize("gold", ["5", "C", "", "   ", "(B)"])
def test_a_gold_too_short_or_empty_is_undetermined(tok, gold):
    ids, mask = written(tok, (SENIOR, "He gets 5 more: 0 + 5 = 5.\n\n"), (JUNIOR, "The answer is 5."))
    assert leak.gold_key(gold) is None
    assert leak.answer_visible(ids, mask, gold, tok) == UNDETERMINED


def test_visible_when_the_senior_wrote_it_before_the_juniors_last_turn(tok):
    ids, mask = written(tok, (SENIOR, "Start 8.\n\n"), (JUNIOR, "8 + 1 = 9.\n\n"), (SENIOR, "9 + 3 = 12.\n\n"),
                         (JUNIOR, "The answer is \\boxed{12}."))
    assert leak.answer_visible(ids, mask, "12", tok) == VISIBLE
    assert leak.final_author(ids, mask, tok) == "junior"


def test_not_visible_when_only_the_junior_or_a_later_senior_turn_wrote_it(tok):
    junior_only = written(tok, (SENIOR, "Start 8.\n\n"), (JUNIOR, "8 + 4 = 12.\n\n"), (SENIOR, "So:\n\n"),
                           (JUNIOR, "\\boxed{12}"))
    assert leak.answer_visible(*junior_only, "12", tok) == NOT_VISIBLE
    senior_after = written(tok, (SENIOR, "Start 8.\n\n"), (JUNIOR, "Add 4.\n\n"), (SENIOR, "8 + 4 = 12, \\boxed{12}"))
    assert leak.answer_visible(*senior_after, "12", tok) == NOT_VISIBLE
    assert leak.final_author(*senior_after, tok) == "senior"


def test_a_solo_response_counts_all_of_its_text(tok):
    ids, _ = written(tok, (SENIOR, "8 + 4 = 12. \\boxed{12}"))
    assert leak.answer_visible(ids, None, "12", tok) == VISIBLE
    assert leak.answer_visible(ids, None, "13", tok) == NOT_VISIBLE
    assert leak.final_author(ids, None, tok) == "senior"


def test_the_final_author_follows_the_graders_preference_for_a_box(tok):
    boxed_first = written(tok, (SENIOR, "\\boxed{7}\n\n"), (JUNIOR, "The answer is 8."))
    assert leak.final_author(*boxed_first, tok) == "senior"  # the grader reads the box, not the later phrase
    nothing = written(tok, (SENIOR, "Start 8.\n\n"), (JUNIOR, "Then 9."))
    assert leak.final_author(*nothing, tok) == "none"


def test_the_budget_is_hit_by_length_not_by_the_round_cap():
    assert leak.hit_budget("length") and leak.hit_budget("length", False)
    assert not leak.hit_budget("length", True) and not leak.hit_budget("stop")


def _row(pid: str, sample: int, correct: bool, visible: str | None) -> SampleRow:
    return SampleRow(pid, "b", "b", sample, "12", None, correct, "stop", 3, "", [], [], answer_visible=visible,
                     final_author="junior", hit_budget=False)


def test_leak_controlled_pass_at_k_uses_each_problems_clean_samples_and_counts_the_rest():
    rows = [_row("p1", 0, True, NOT_VISIBLE), _row("p1", 1, False, NOT_VISIBLE), _row("p1", 2, False, NOT_VISIBLE),
            _row("p1", 3, True, VISIBLE), _row("p2", 0, True, NOT_VISIBLE), _row("p2", 1, True, UNDETERMINED),
            _row("p3", 0, True, VISIBLE)]
    clean = leak.controlled_counts(rows)
    assert clean == [{"id": "p1", "n": 3, "c": 1}, {"id": "p2", "n": 1, "c": 1}, {"id": "p3", "n": 0, "c": 0}]
    scores = leak.pass_at_k_over_clean([(p["n"], p["c"]) for p in clean], [1, 2, 4])
    assert scores["pass@1"] == pytest.approx((1 / 3 + 1) / 2)  # p3 has no clean sample: left out
    assert scores["pass@2"] == pytest.approx(1 - 1 / 3)  # only p1 has two: 1 - C(2,2) / C(3,2)
    assert scores["pass@4"] is None
    assert scores["left_out"] == {"pass@1": 1, "pass@2": 2, "pass@4": 3}
    rates = leak.rates(rows + [_row("p4", 0, True, None)])
    assert rates["answer_visible"] == {"visible": 2, "not_visible": 4, "undetermined": 1, "unknown": 1,
                                       "visible_rate": 2 / 6, "undetermined_rate": 1 / 7}


def test_leak_controlled_standard_errors_drop_problems_below_k():
    counts = {"a": [(4, 2), (1, 1), (0, 0)], "b": [(0, 0), (0, 0)]}
    stats = leak.pass_at_k_over_clean_with_se(counts, [1, 2], resamples=200, seed=0)
    assert stats["a"]["pass@1"]["mean"] == pytest.approx((0.5 + 1) / 2)
    assert stats["b"]["pass@1"] is None and stats["macro"]["pass@1"]["mean"] == stats["a"]["pass@1"]["mean"]
    assert stats["a"]["pass@2"]["mean"] == pytest.approx(1 - 1 / 6) and stats["a"]["pass@2"]["se"] == pytest.approx(0.0, abs=1e-12)
    assert stats["left_out"] == {"pass@1": 3, "pass@2": 4}


def test_rows_without_the_new_fields_read_back_and_write_back_without_them():
    old = {"problem_id": "p", "benchmark": "b", "source": "b", "sample": 0, "gold": "1", "extracted_answer": None,
           "correct": False, "finish_reason": "stop", "num_tokens": 0, "text": "", "response_ids": [],
           "prompt_ids": [1]}
    row = SampleRow.from_json(old)
    assert (row.answer_visible, row.final_author, row.hit_budget) == (None, None, None)
    assert row.to_json() == old
    new = _row("p", 0, True, VISIBLE).to_json()
    assert list(new)[-3:] == ["answer_visible", "final_author", "hit_budget"]
    assert SampleRow.from_json(new).to_json() == new
    handoff = SampleRow.from_json({**old, "num_handoffs": 1, "senior_fraction": 0.25})  # the field users read
    assert handoff.senior_token_fraction == 0.25 and handoff.to_json()["senior_fraction"] == 0.25


def test_the_prefix_is_cut_before_the_answer_first_appears(tok):
    ids, _ = written(tok, (SENIOR, "Start 8.\n\n8 + 4 = 12.\n\n12 - 2 = 10.\n\nThe answer is \\boxed{10}."))
    first = next(c for c in range(len(ids) + 1) if leak.shows_answer(tok.decode(ids[:c]), "10"))
    cut = prefix_transfer.cut_point(ids, "10", 0.95, tok)
    assert cut < int(0.95 * len(ids)) and cut < first
    assert not leak.shows_answer(tok.decode(ids[:cut]), "10")
    assert prefix_transfer.cut_point(ids, "10", 0.2, tok) == int(0.2 * len(ids))  # the answer comes later
    assert prefix_transfer.cut_point(ids, "5", 0.5, tok) is None  # undetermined: never continued


@pytest.mark.parametrize("gold, text", [("18", "She buys 5 more: 13 + 5 = 18.\n\nThe answer is \\boxed{18}."),
                                        ("-15", "Start 2.\n\n0 - 7 = -7.\n\n-7 - 8 = -15.\n\nSo -15.")])
def test_the_prefix_never_ends_inside_the_answers_number(tok, gold, text):
    # Digits are one token each here: a cut moved back only until the answer is no longer shown
    # would end "13 + 5 = 1" for gold 18 (issue 44). Every cut must end before the whole number.
    ids = tok(text, add_special_tokens=False)["input_ids"]
    first = leak.first_appearance(text, leak.gold_key(gold))
    for c in range(1, len(ids) + 1):
        cut = prefix_transfer.cut_point(ids, gold, c / (len(ids) + 1), tok)
        shown = tok.decode(ids[:cut])
        assert len(shown) <= first and not leak.shows_answer(shown, leak.gold_key(gold))
    assert tok.decode(ids[:prefix_transfer.cut_point(ids, gold, 0.999, tok)]).rstrip() == text[:first].rstrip()


@pytest.mark.parametrize("text, gold, shown", [
    ("8 - 5 = 3.", "-15", False), ("8 - 15 = -7.", "-15", False), ("8-15", "-15", False), ("x-15", "-15", False),
    ("so x = -15.", "-15", True), ("(-15)", "-15", True), ("it is -15 now", "-15", True), ("-15 apples", "-15", True),
    ("8 - 15 = -7.", "15", True), ("x = -15.", "15", False), ("12.0 coins", "12", True), ("12.50", "12.5", True),
    # from held-out cases: a bare decimal part is its value both ways, and the Unicode minus is a sign
    ("So p = .5 exactly.", "0.5", True), ("So p = 0.5 exactly.", ".5", True), ("p = 10.5", ".5", False),
    ("The value is \u221212 here.", "-12", True), ("The value is \u221212 here.", "12", False),
    ("8 \u2212 12 = -4", "-12", False),
])
def test_numbers_are_compared_by_value_with_a_minus_as_a_sign_only_when_not_binary(text, gold, shown):
    assert leak.shows_answer(text, leak.gold_key(gold)) is shown


def test_a_sign_does_not_make_a_single_digit_gold_determined():
    assert leak.gold_key("-5") is None and leak.gold_key("5") is None
    assert leak.gold_key("-15") == "-15" and leak.gold_key("0.5") == "0.5"


def test_prefix_transfer_also_reports_prefixes_of_correct_solo_responses_only():
    def row(pid, correct):
        return SampleRow(pid, "b", "b", 0, "12", None, correct, "stop", 3, "", [], [], senior_token_fraction=0.5)

    rows = [row("p1", True), row("p1", False), row("p2", True), row("p2", True)]
    summary = prefix_transfer.summarize_fraction(["p1", "p2"], rows, rows, [1], solo_correct=[True, False, False, True])
    assert summary["pass_at_k"]["pass@1"] == pytest.approx((0.5 + 1.0) / 2)
    right = summary["from_correct_solo"]
    assert right["continued"] == 2 and right["per_problem"] == [{"id": "p1", "n": 1, "c": 1}, {"id": "p2", "n": 1, "c": 1}]
    assert right["pass_at_k"]["pass@1"] == pytest.approx(1.0)
    assert "from_correct_solo" not in prefix_transfer.summarize_fraction(["p1", "p2"], rows, rows, [1])


@pytest.mark.parametrize("bad", ["0", "1", "-0.1", "1.5", "nan", "half"])
def test_a_fraction_outside_the_open_interval_is_refused(bad):
    with pytest.raises(TandemError, match=r"outside \(0, 1\)"):
        prefix_transfer.check_fractions(["0.3", bad])
    assert prefix_transfer.check_fractions(["0.7", "0.3", "0.3"]) == (0.3, 0.7)


@pytest.fixture()
def mini(tmp_path):
    path = tmp_path / "mini.jsonl"
    rows = [{"id": f"m{i}", "problem": f"What is {i}+30?", "answer": str(i + 30), "source": "mini"} for i in range(3)]
    rows.append({"id": "m3", "problem": "What is 2+3?", "answer": "5", "source": "mini"})  # undetermined gold
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_eval_handoff_refuses_a_bad_fraction_before_any_work(tiny_dir, mini, tmp_path, capsys):
    out = tmp_path / "h"
    code = eval_step_handoff.main(["--senior", str(tiny_dir), "--junior", str(tiny_dir), "--benchmarks",
                                       str(mini), "--out-dir", str(out), "--prefix-fractions", "0.5", "1"])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1 and "outside (0, 1)" in err[0]
    assert not out.exists()


def test_eval_handoff_reports_leaks_and_prefix_transfer(tiny_dir, tiny_dir_seed1, mini, tmp_path, capsys):
    common = ["--benchmarks", str(mini), "--n", "2", "--max-new-tokens", "16", "--temperature", "1", "--top-k", "0",
              "--seed", "1"]
    solo = tmp_path / "solo"
    assert eval_solo.main(["--model", str(tiny_dir), "--out-dir", str(solo), *common]) == 0
    solo_summary = json.loads((solo / "mini.summary.json").read_text())
    assert solo_summary["answer_visible"]["undetermined"] == 2  # gold 5, two samples
    assert all(r["final_author"] in ("senior", "none") for r in read_jsonl(solo / "mini.samples.jsonl"))

    handoff = ["--senior", str(tiny_dir), "--junior", str(tiny_dir_seed1), *common, "--leak-control",
               "--prefix-fractions", "0.3", "0.7"]
    generated, read = tmp_path / "gen", tmp_path / "read"
    assert eval_step_handoff.main([*handoff, "--out-dir", str(generated)]) == 0
    assert "leak-controlled" in capsys.readouterr().out
    assert eval_step_handoff.main([*handoff, "--out-dir", str(read), "--prefix-solo-dir", str(solo)]) == 0

    summary = json.loads((generated / "mini.summary.json").read_text())
    assert summary["answer_visible"]["unknown"] == 0 and summary["answer_visible"]["undetermined"] == 2
    assert summary["hit_budget"]["count"] == summary["finish_reasons"]["length"]
    assert sum(summary["final_author"].values()) == 8
    assert summary["leak_controlled"]["left_out"]["pass@1"] >= 1  # the undetermined problem has no clean sample
    rows = read_jsonl(generated / "mini.samples.jsonl")
    assert all(r["answer_visible"] in leak.VISIBILITY and isinstance(r["hit_budget"], bool) for r in rows)

    prefix = json.loads((generated / "mini.prefix.summary.json").read_text())
    assert list(prefix["fractions"]) == ["0.3", "0.7"]
    for f in prefix["fractions"].values():
        assert f["continued"] == 6 and f["undetermined"] == 2 and f["pass_at_k"]["left_out"]["pass@1"] == 1
    solo_rows = {(r["problem_id"], r["sample"]): r for r in read_jsonl(solo / "mini.samples.jsonl")}
    for r in read_jsonl(generated / "mini.prefix.jsonl"):
        senior = solo_rows[(r["problem_id"], r["sample"])]["response_ids"]
        cut = r["cut_tokens"]
        assert r["response_ids"][:cut] == senior[:cut] and cut <= int(r["fraction"] * len(senior))
        assert r["authorship_mask"] == [1] * cut + [0] * (len(r["response_ids"]) - cut)
        assert r["answer_visible"] == NOT_VISIBLE
    # the senior's responses generated here are eval-solo's: reading them back gives the same continuations
    assert read_jsonl(read / "mini.prefix.jsonl") == read_jsonl(generated / "mini.prefix.jsonl")
    capsys.readouterr()
    assert eval_step_handoff.main([*handoff, "--out-dir", str(generated)]) == 0
    assert "mini: prefix transfer already done with this config, skipped" in capsys.readouterr().err


def test_the_demos_transfer_evaluation_reuses_the_demos_samples(tiny_dir, tiny_dir_seed1):
    from tandem_app.task import generate_problems
    from tandem_app.task import DEMO_TASK
    from tandem_app.train.evaluate import EvalConfig, evaluate_senior, evaluate_transfer
    from tandem_eval.core.sampling import eval_sampling

    problems = generate_problems("test", 3, 0, DEMO_TASK)
    cfg = EvalConfig(n_problems=3, n_samples=2, sampling=eval_sampling(max_new_tokens=24, seed=5))
    got = evaluate_transfer(tiny_dir, tiny_dir_seed1, problems, cfg, (0.3, 0.7), tag="t")
    plain = evaluate_senior(tiny_dir, tiny_dir_seed1, problems, cfg, tag="t")
    assert got["solo_counts"] == plain["solo_counts"] and got["handoff_counts"] == plain["handoff_counts"]
    undetermined = sum(len(p.answer) < 2 for p in problems) * 2
    for p, (n, c), (_, all_c) in zip(problems, got["handoff_clean"], [(2, c) for c in got["handoff_counts"]]):
        assert c <= n <= (0 if len(p.answer) < 2 else 2) and c <= all_c  # an undetermined gold is never clean
    for f in ("0.3", "0.7"):
        assert [n for n, _ in got["prefix"][f]["counts"]] == [0 if len(p.answer) < 2 else 2 for p in problems]
        right = got["prefix"][f]["counts_correct_solo"]  # a subset of each problem's continuations: the correct solos
        assert all(n <= min(all_n, solo) and c <= n
                   for (n, c), (all_n, _), solo in zip(right, got["prefix"][f]["counts"], got["solo_counts"]))
        assert 0 <= got["prefix"][f]["mean_cut_fraction"] <= float(f)
    assert got["handoff_rates"]["undetermined_rate"] == pytest.approx(undetermined / 6)


def test_the_demo_table_pairs_trl_and_grpo_over_the_problems_both_score(tmp_path):
    from tandem_app.experiments import leak_demo

    def result(clean, prefix):
        rates = {"visible_rate": 0.5, "undetermined_rate": 0.0, "hit_budget_rate": 0.0, "junior_final_rate": 1.0}
        return {"n": 2, "handoff_counts": [2, 1, 0], "determined": [True, True, False], "handoff_clean": clean,
                "solo_rates": rates,
                "handoff_rates": rates, "prefix": {"0.5": {"counts": prefix, "mean_cut_fraction": 0.4}}}

    per_seed = {0: {"grpo": result([[2, 1], [1, 1], [0, 0]], [[2, 0], [2, 2], [2, 1]]),
                    "tandem": result([[1, 1], [0, 0], [2, 2]], [[2, 2], [2, 2], [2, 1]])}}
    leak_demo.write_table(tmp_path, per_seed)
    paired = json.loads((tmp_path / "leak.json").read_text())["paired"]["tandem-grpo"]
    assert paired["handoff, no leak"]["per_seed"] == [[0.5, 0.0, 1]]  # only problem 0 is clean in both arms
    assert paired["handoff, no leak"]["interval"]["t"] is None  # one seed: no interval over seeds
    assert paired["prefix 0.5"]["per_seed"][0][0] == pytest.approx(1 / 3) and paired["prefix 0.5"]["per_seed"][0][2] == 3
    assert paired["handoff, gold determined"]["per_seed"] == [[0.0, 0.0, 2]]  # problem 2's gold is undetermined
    md = (tmp_path / "leak.md").read_text()
    assert "| handoff, no leak | GRPO | 0.750 (2) |" in md and "| handoff, no leak | TRL | 1.000 (2) |" in md
