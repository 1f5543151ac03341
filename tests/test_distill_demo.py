"""The distillation experiment's report: per seed and teacher, then the teachers' paired differences over seeds."""

import json

import pytest

from tandem_app.experiments import distill_demo


def _run(out, seed, teacher, after, accuracy_before=0.5):
    run = out / f"seed-{seed}" / teacher
    (run / "eval").mkdir(parents=True)
    n = 2
    summary = {"n_traces": 10, "trace_tokens": 480, "traces_correct_fraction": 0.9, "accuracy_before": accuracy_before,
               "accuracy_after": sum(after) / (n * len(after)), "gain": 0.1, "gain_se": 0.05, "n_samples": n,
               "student_after": str(run / "student" / "model")}
    (run / "summary.json").write_text(json.dumps(summary))
    (run / "eval" / "after.json").write_text(json.dumps({"counts": after}))
    (run / "notation.json").write_text(json.dumps({"teacher_terse": 0.0, "student_terse": 0.1}))


def test_the_report_pairs_the_students_over_problems_and_averages_over_seeds(tmp_path):
    _run(tmp_path, 0, "tandem", [2, 2, 1, 0])
    _run(tmp_path, 0, "grpo", [1, 2, 1, 0])
    _run(tmp_path, 1, "tandem", [2, 2, 2, 2])
    _run(tmp_path, 1, "grpo", [0, 2, 2, 2])
    result = distill_demo.report(tmp_path, [0, 1], ["grpo", "tandem", "rlt"])
    pair = result["pairs"]["tandem - grpo"]
    assert pair["per_seed"][0] == pytest.approx((0.125, 0.125))  # per problem: +0.5, 0, 0, 0
    assert pair["per_seed"][1] == pytest.approx((0.25, 0.25))
    assert pair["over_seeds"] == pytest.approx((0.1875, 0.0625))
    assert pair["interval"]["df"] == 1 and pair["interval"]["low"] == pytest.approx(0.1875 - 12.7062 * 0.0625, abs=1e-3)
    assert "rlt - tandem" not in result["pairs"]  # no RLT teacher on any seed: no pair
    md = (tmp_path / "distill.md").read_text()
    assert "| 0 | RLT setting | not run |" in md and "| +0.188 ± 0.062, 95% t(1) [-0.607, +0.982] (2 seeds) |" in md
    assert json.loads((tmp_path / "distill.json").read_text())["protocol"] == distill_demo.PROTOCOL


def test_a_seed_without_a_teacher_is_left_out_of_running_and_named(tmp_path, capsys):
    (tmp_path / "demo" / "seed-0").mkdir(parents=True)
    assert distill_demo.run_teacher(tmp_path / "demo", tmp_path / "out", 0, "rlt", progress=False) is None
    assert distill_demo.main(["--demo", str(tmp_path / "demo"), "--out", str(tmp_path / "out"), "--seeds", "0",
                              "--teachers", "rlt", "--no-progress"]) == 0
    assert "seed 0 has no RLT setting teacher" in capsys.readouterr().err


@pytest.mark.parametrize("teacher, student", [("rlt", "rlt-student"), ("rlt_warmup", "rlt-student"),
                                              ("grpo", "sft/model")])
def test_rlts_writers_before_and_after_rl_are_distilled_into_rlts_student_form(tmp_path, monkeypatch, teacher, student):
    import tandem_app.distill.run as distill_run

    (tmp_path / "demo" / "seed-0" / distill_demo.TEACHERS[teacher][0] / "model").mkdir(parents=True)
    seen = {}
    monkeypatch.setattr(distill_run, "run_distill", lambda cfg, resume, progress: seen.update(cfg=cfg))
    distill_demo.run_teacher(tmp_path / "demo", tmp_path / "out", 0, teacher, progress=False)
    cfg = seen["cfg"]
    assert cfg.student.endswith(f"seed-0/{student}")
    rlt_form = teacher in distill_demo.RLT_TEACHERS
    assert cfg.writer_sees_solution is rlt_form and (cfg.temperature == 0.7) is rlt_form
    assert (cfg.eval_sampling.max_new_tokens == distill_demo.RLT_EVAL_TOKENS) is rlt_form


def test_rlts_teachers_rows_carry_the_copy_shares_of_their_traces_and_no_other_teachers_do(tmp_path):
    from tandem.rewards.solution_prompt import student_completion, writer_turn_start

    for t in ("rlt_warmup", "grpo"):
        _run(tmp_path, 0, t, [1, 2])
    solution = "Mia starts with 3 pens.\n\nThe answer is \\boxed{3}."
    trace = {"prompt": writer_turn_start(solution), "response": student_completion(solution, solution)}
    (tmp_path / "seed-0" / "rlt_warmup" / "traces.jsonl").write_text(json.dumps(trace) + "\n")
    rows = distill_demo.report(tmp_path, [0], ["grpo", "rlt_warmup"])["seeds"][0]
    assert rows["rlt_warmup"]["copies"] == {"n": 1, "carries_numbers": 1.0, "exact": 1.0}
    assert "copies" not in rows["grpo"]
