"""The partner score's validity benchmark (scripts/partner_score_validity.py): the explanations per problem
(own solution, another row's by a fixed derangement, empty, the scorer's own sample, and the controls of issue 63:
another row's solution ending in this row's gold, the own solution ending in a wrong total, the own solution in the
other notation), the summary fields and pairwise win rates of the contract, the run's provenance, and bad input as
one line with exit 2. On the quick demo's base the controls pin what the `answer` target reads: the last stated
number, not the reasoning before it (a documented limit, model_spec/results/partner_score_controls.json)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "partner_score_validity.py"


@pytest.fixture(scope="module")
def validity():
    spec = importlib.util.spec_from_file_location("partner_score_validity", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _data(path: Path, n: int, solution: bool = True, notation: bool = False) -> Path:
    import random

    from tandem_app.task import DEMO_TASK, Demonstrations, demonstration, generate_problems

    terse = Demonstrations(terse_prob=1.0)
    rows = [{"question": p.prompt, "answer": p.answer, **({"solution": p.solution} if solution else {}),
             **({"other_notation": demonstration(p, terse, random.Random(0))} if notation else {})}
            for p in generate_problems("test", n, 0, DEMO_TASK)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_the_shuffled_explanation_is_always_another_rows(validity):
    for n in (2, 3, 32):
        perm = validity.derangement(n)
        assert sorted(perm) == list(range(n)) and all(j != i for i, j in enumerate(perm))


def test_the_summary_compares_own_with_shuffled_problem_by_problem(validity):
    scores = {"own": [-1.0, -2.0, -3.0, -0.5], "shuffled": [-2.0, -1.0, -4.0, -0.5], "empty": [0.0] * 4,
              "sampled": [-1.0] * 4}
    got = validity.summarize(scores)
    assert got["n"] == 4 and got["mean_score"]["own"] == pytest.approx(-1.625)
    assert got["own_minus_shuffled_mean"] == pytest.approx((1 - 1 + 1 + 0) / 4)
    assert got["own_beats_shuffled_fraction"] == pytest.approx(2 / 4)  # a tie does not beat


ALL_KINDS = {"own", "shuffled", "empty", "sampled", "shuffled_gold_total", "own_wrong_total", "other_notation"}
PAIRS = {"own_vs_shuffled", "own_wrong_total_vs_shuffled_gold_total", "own_vs_other_notation"}


def test_the_summary_gives_each_pairs_win_rate_and_what_the_swap_reads(validity):
    scores = {"own": [-1.0, -2.0, -3.0, -0.5], "shuffled": [-2.0, -1.0, -4.0, -0.5], "empty": [0.0] * 4,
              "sampled": [-1.0] * 4, "shuffled_gold_total": [-0.5, -0.5, -0.5, -0.5],
              "own_wrong_total": [-3.0, -0.1, -3.0, -3.0], "other_notation": [-1.0, -2.0, -3.0, -0.5]}
    got = validity.summarize(scores)
    assert set(got["pairwise"]) == PAIRS
    swap = got["pairwise"]["own_wrong_total_vs_shuffled_gold_total"]
    assert (swap["a"], swap["b"], swap["a_beats_b_fraction"], swap["ties"]) == ("own_wrong_total",
                                                                              "shuffled_gold_total", 0.25, 0)
    assert swap["mean_a_minus_b"] == pytest.approx((-2.5 + 0.4 - 2.5 - 2.5) / 4)
    assert got["reads_last_number"] is True  # the gold at the end beat the own reasoning on 3 of 4
    notation = got["pairwise"]["own_vs_other_notation"]
    assert notation["a_beats_b_fraction"] == 0.0 and notation["ties"] == 4
    scores["own_wrong_total"] = [-0.1, -0.1, -3.0, -3.0]  # wins on exactly half: neither reading
    assert validity.summarize(scores)["reads_last_number"] is None


@pytest.mark.parametrize("solution, value, swapped", [
    ("Zoe starts with 9 marbles.\n\nShe loses 1: 12 - 1 = 11.\n\nThe answer is \\boxed{11}.", "7",
     "Zoe starts with 9 marbles.\n\nShe loses 1: 12 - 1 = 7.\n\nThe answer is \\boxed{7}."),
    ("Start 9.\n\n0 + 3 = 3.\n\n9 + 3 = 12. \\boxed{12}", "5", "Start 9.\n\n0 + 3 = 3.\n\n9 + 3 = 5. \\boxed{5}"),
    ("x = 4 - 10 = -6, so \\boxed{-6}", "8", "x = 4 - 10 = 8, so \\boxed{8}"),  # a sign goes with its number
    ("8 - 5 = 3.", "4", "8 - 5 = 4."),  # a binary minus stays; no box: the last number
    ("2 + 2 = 4, \\boxed{\\frac{8}{2}} apples", "5", "2 + 2 = 5, \\boxed{5} apples"),  # the whole box
])
def test_only_the_last_stated_total_and_the_box_are_swapped(validity, solution, value, swapped):
    assert validity.with_last_total(solution, value) == swapped


def test_the_number_swap_controls_swap_the_same_two_numbers_between_two_solutions(validity):
    from tandem_app.task import generate_problems
    from tandem_app.task import DEMO_TASK

    problems = generate_problems("test", 6, 0, DEMO_TASK)
    rows = [{"question": p.prompt, "answer": p.answer, "solution": p.solution} for p in problems]
    rows[2]["answer"] = rows[3]["answer"]  # the next row's answer equals row 2's: its wrong total is row 4's
    texts = validity.explanation_texts(rows)
    assert set(texts) == {"own", "shuffled", "shuffled_gold_total", "own_wrong_total"}  # no other_notation
    wrong = validity.wrong_totals(rows)
    assert wrong[2] == rows[4]["answer"] and all(w != r["answer"] for w, r in zip(wrong, rows))
    for i, row in enumerate(rows):
        j = (i + 1) % len(rows)
        assert texts["shuffled_gold_total"][i] == validity.with_last_total(rows[j]["solution"], row["answer"])
        assert texts["shuffled_gold_total"][i].endswith(f"\\boxed{{{row['answer']}}}.")
        assert texts["own_wrong_total"][i] == validity.with_last_total(row["solution"], wrong[i])
        own, swapped = row["solution"].split("\n\n"), texts["own_wrong_total"][i].split("\n\n")
        assert own[:-2] == swapped[:-2] and own[-2] != swapped[-2]  # only the last step and the box differ


@pytest.mark.parametrize("target", ["solution", "answer"])
def test_a_run_writes_the_contracts_fields_for_each_kind(validity, tiny_dir, tmp_path, target, capsys):
    out = tmp_path / "v.json"
    data = _data(tmp_path / "d.jsonl", 5, notation=True)
    code = validity.main(["--scorer", str(tiny_dir), "--data", str(data), "--target", target,
                          "--out", str(out), "--n", "3", "--max-new-tokens", "8"])
    got = json.loads(out.read_text())
    assert code == 0 and got["n"] == 3 and got["target"] == target
    assert set(got["mean_score"]) == ALL_KINDS and got["kinds_skipped"] == {}
    assert all(len(v) == 3 and all(x < 0 for x in v) for v in got["per_problem"].values())  # log-probs
    assert 0.0 <= got["own_beats_shuffled_fraction"] <= 1.0
    assert got["own_minus_shuffled_mean"] == pytest.approx(got["mean_score"]["own"] - got["mean_score"]["shuffled"])
    assert set(got["pairwise"]) == PAIRS and got["reads_last_number"] in (True, False, None)
    assert got["terse_share"]["own"] == 0.0 and got["terse_share"]["other_notation"] == 1.0
    prov = got["provenance"]
    assert re.fullmatch(r"[0-9a-f]{40}", prov["commit"]) and isinstance(prov["dirty"], bool)
    assert set(prov["machine"]) == {"platform", "cpu_model", "cpu_count", "torch_threads"}
    assert prov["machine"]["cpu_count"] >= 1 and prov["machine"]["torch_threads"] >= 1


def test_rows_without_another_notation_skip_that_kind_and_say_so(validity, tiny_dir, tmp_path, capsys):
    out = tmp_path / "v.json"
    assert validity.main(["--scorer", str(tiny_dir), "--data", str(_data(tmp_path / "d.jsonl", 3)), "--target",
                          "answer", "--out", str(out), "--max-new-tokens", "4"]) == 0
    got = json.loads(out.read_text())
    assert set(got["mean_score"]) == ALL_KINDS - {"other_notation"} and "other_notation" in got["kinds_skipped"]
    assert set(got["pairwise"]) == PAIRS - {"own_vs_other_notation"}


def test_data_without_a_solution_column_is_one_line_and_exit_2(validity, tiny_dir, tmp_path, capsys):
    out = tmp_path / "v.json"
    code = validity.main(["--scorer", str(tiny_dir), "--data", str(_data(tmp_path / "d.jsonl", 3, solution=False)),
                          "--target", "solution", "--out", str(out)])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1 and "'solution'" in err[0] and not out.exists()

@pytest.mark.parametrize("case, lines, flags, says", [
    ("a line that is not JSON", ['{"question": "q", "answer": "1", "solution": "s1"}', "{question: q}"], [],
     "d.jsonl:2: not a JSON object"),
    ("two rows of one problem", ['{"question": "q", "answer": "1", "solution": "s"}'] * 2, [], "hold the same solution"),
    ("fewer than two rows asked", None, ["--n", "0"], "--n 0: score at least 2 rows"),
    ("more rows asked than the data holds", None, ["--n", "10"], "holds 3 rows"),
    ("a solution with no number to swap", ['{"question": "q", "answer": "1", "solution": "one"}',
                                           '{"question": "r", "answer": "2", "solution": "2"}'], [],
     "states no number"),
    ("one answer for every row", ['{"question": "q", "answer": "1", "solution": "s1"}',
                                  '{"question": "r", "answer": "1", "solution": "t1"}'], [],
     "no row has a wrong total"),
    ("another notation on some rows only",
     ['{"question": "q", "answer": "1", "solution": "s1", "other_notation": "o"}',
      '{"question": "r", "answer": "2", "solution": "t2"}'], [], "row 1 has no 'other_notation'"),
    ("a demo folder that is not one", None, ["--demo-instead"], "no demo_config.json"),
])
def test_bad_data_found_by_a_held_out_tester_is_one_line_and_exit_2(validity, tiny_dir, tmp_path, capsys, case, lines,
                                                                  flags, says):
    data = tmp_path / "d.jsonl"
    if lines is None:
        _data(data, 3)
    else:
        data.write_text("\n".join(lines) + "\n")
    out = tmp_path / "v.json"
    source = ["--demo", str(tmp_path)] if flags == ["--demo-instead"] else ["--data", str(data), *flags]
    code = validity.main(["--scorer", str(tiny_dir), *source, "--target", "answer", "--out", str(out)])
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1 and says in err[0] and not out.exists(), case


# On a real base: the quick demo's SFT base, on 64 of its own test problems. Target `answer`: after
# the problem's own worked solution the base must predict the answer far better than after another
# problem's, on at least 90% of problems (measured 0.984 at seed 0). Target `solution` does not reach
# that bar on this base (measured 0.656 when RESULTS.md was written, 0.531 on issue 63's rerun: a base
# trained on question -> solution predicts the solution from the question alone), so only its
# direction is asserted and the docs state the number (model_spec/RESULTS.md).
N_DEMO = 64


@pytest.fixture(scope="module")
def quick_rows(tmp_path_factory) -> Path:
    from tandem_app.task import generate_problems
    from tandem_app.experiments.demo import demo_config

    cfg = demo_config(quick=True)
    path = tmp_path_factory.mktemp("validity") / "quick_test.jsonl"
    rows = [{"question": p.prompt, "answer": p.answer, "solution": p.solution}
            for p in generate_problems("test", N_DEMO, cfg.seed, cfg.task)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _measure(validity, quick_demo, data, target, tmp_path) -> dict:
    out = tmp_path / f"{target}.json"
    argv = ["--scorer", str(quick_demo / "sft" / "model"), "--data", str(data), "--target", target,
            "--out", str(out), "--n", str(N_DEMO)]
    assert validity.main(argv) == 0
    return json.loads(out.read_text())


@pytest.fixture(scope="module")
def quick_answer(validity, quick_demo, tmp_path_factory) -> dict:
    """The bench with target `answer` on the quick demo's base and its own 64 test problems (`--demo`: the rows of
    `quick_rows`, each with its terse notation too), run once for the tests below."""
    out = tmp_path_factory.mktemp("validity") / "answer.json"
    assert validity.main(["--demo", str(quick_demo), "--target", "answer", "--out", str(out)]) == 0
    return json.loads(out.read_text())


def test_the_answer_target_reads_the_explanation_on_the_demo_base(quick_answer):
    got = quick_answer
    assert got["n"] == N_DEMO and got["scorer"].endswith("sft/model")
    assert (got["demo"]["quick"], got["demo"]["seed"]) == (True, 0)
    assert got["own_beats_shuffled_fraction"] >= 0.9, got
    assert got["mean_score"]["own"] > got["mean_score"]["empty"] > got["mean_score"]["shuffled"], got


# The controls of issue 63 on the same run (measured at seed 0, model_spec/results/partner_score_controls.json):
# mean log-prob per target token own -0.004, shuffled -5.97, empty -5.09, shuffled_gold_total -0.71,
# own_wrong_total -5.53, other_notation (terse) -0.004. The `answer` target reads the last stated number: another
# problem's reasoning ending in this problem's gold beats this problem's own reasoning ending in a wrong total on 62
# of 64 problems (own_wrong_total wins 0.031). Pinned with a wide tolerance: own_wrong_total wins at most a quarter.
# Should a change to the score make it read the reasoning, this test fails and the finding is to be measured again,
# not the bound moved. The two notations of one solution tie (verbose wins 0.516): asserted within [0.3, 0.7] and a
# mean gap under 0.05 nats per token.
def test_the_answer_target_reads_the_last_stated_number_not_the_reasoning(quick_answer):
    got, pairs = quick_answer, quick_answer["pairwise"]
    swap = pairs["own_wrong_total_vs_shuffled_gold_total"]
    assert swap["a_beats_b_fraction"] <= 0.25, swap
    assert got["reads_last_number"] is True
    means = got["mean_score"]
    assert means["own"] > means["shuffled_gold_total"] > means["empty"] > means["own_wrong_total"], means
    assert means["shuffled_gold_total"] - means["own_wrong_total"] > 2.0, means  # measured 4.8 nats per token


def test_two_notations_of_one_solution_score_alike_on_the_demo_base(quick_answer):
    notation = quick_answer["pairwise"]["own_vs_other_notation"]
    shares = quick_answer["terse_share"]
    assert (shares["own"], shares["other_notation"]) == (0.0, 1.0)  # own verbose, the other terse
    assert 0.3 <= notation["a_beats_b_fraction"] <= 0.7, notation  # verbose over terse, measured 0.516
    assert abs(notation["mean_a_minus_b"]) < 0.05, notation


def test_the_solution_target_leans_the_right_way_but_is_not_validated(validity, quick_demo, quick_rows, tmp_path):
    got = _measure(validity, quick_demo, quick_rows, "solution", tmp_path)
    assert got["own_minus_shuffled_mean"] > 0, got
    # the question alone predicts the solution best: the instrument's known limit on this base
    assert got["mean_score"]["empty"] > got["mean_score"]["own"], got
    assert "other_notation" in got["kinds_skipped"]  # rows from a file without the field
