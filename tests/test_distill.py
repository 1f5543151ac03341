"""`tandem-rlvr distill` end to end on the tiny model: summary.json, reuse on rerun, the lock, the refusals."""

from __future__ import annotations

import json
import os
import shutil
import socket

import pytest

from tandem_app.commands.cli import main

# A few traces, SFT steps and eval samples: the whole run takes seconds on one thread.
SMALL = ["n_train_problems=8", "max_new_tokens=24", "steps=3", "batch_size=4", "save_every=3", "n_eval_problems=6",
         "n_samples=2", "eval_sampling.max_new_tokens=16", "threads=1"]


def distill(tiny_dir, out, *extra, teacher=None, student=None):
    return main(["distill", "--teacher", str(teacher or tiny_dir), "--student", str(student or tiny_dir),
                 "--out", str(out), "--no-progress", *SMALL, *extra])


@pytest.fixture(scope="module")
def finished(tiny_dir, tmp_path_factory):
    """One finished run (read-only for tests; a test that writes copies it first) and what it printed."""
    import contextlib
    import io

    out = tmp_path_factory.mktemp("distill") / "run"
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        assert distill(tiny_dir, out) == 0
    return out, printed.getvalue()


def test_a_run_writes_the_summary_with_consistent_numbers(finished):
    out, printed = finished
    s = json.loads((out / "summary.json").read_text())
    for key in ("accuracy_before", "accuracy_after", "gain", "gain_se", "n_eval_problems", "n_samples", "n_traces",
                "trace_tokens", "traces_correct_fraction", "dropped_too_long", "cut_too_long", "teacher", "student",
                "seconds"):
        assert key in s, key
    assert s["gain"] == pytest.approx(s["accuracy_after"] - s["accuracy_before"])
    assert set(s["seconds"]) == {"traces", "eval_before", "sft", "eval_after"}
    before, after = (json.loads((out / "eval" / f"{n}.json").read_text()) for n in ("before", "after"))
    assert s["accuracy_before"] == sum(before["counts"]) / (6 * 2) and len(after["counts"]) == 6
    rows = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    assert len(rows) == s["n_traces"] == 8 and s["trace_tokens"] == sum(len(r["student_response_ids"]) for r in rows)
    assert s["traces_correct_fraction"] == sum(r["correct"] for r in rows) / len(rows)
    assert {"prompt", "response", "token_ids", "correct", "id"} <= set(rows[0])
    assert (out / "student" / "model" / "config.json").is_file() and s["student_after"].endswith("student/model")
    lines = printed.strip().splitlines()
    assert "traces: none of 8 is longer than the student's context (1024 tokens)" in lines
    # the counts line adds up to what summary.json records; a header per phase, in order
    assert (f"traces: {s['n_problems_read']} written by the teacher "
            f"({round(s['teacher_correct_fraction'] * s['n_problems_read'])} correct): "
            f"{s['n_traces']} kept ({s['trace_tokens']} tokens)") in lines
    headers = [line.split(":")[0] for line in lines if line.startswith("[")]
    assert headers == ["[1/4] the teacher's traces", "[2/4] the student's solo accuracy before",
                       "[3/4] the student's SFT on the traces", "[4/4] the student's solo accuracy after"]
    assert lines[-1].startswith(f"distill: student solo accuracy {s['accuracy_before']:.3f} -> "
                                f"{s['accuracy_after']:.3f}, gain {s['gain']:+.3f} ± {s['gain_se']:.3f} (paired SE")


def test_a_rerun_reuses_every_phase(finished, tmp_path, monkeypatch, capsys):
    from tandem_app.distill import evaluation, student_sft, traces

    out = shutil.copytree(finished[0], tmp_path / "run")
    was = json.loads((out / "summary.json").read_text())
    for module, name in ((traces, "collect"), (student_sft, "train"), (evaluation, "evaluate_solo")):
        monkeypatch.setattr(module, name, lambda *a, **k: pytest.fail("a finished phase ran again"))
    assert main(["distill", "--out", str(out), "--resume", "--no-progress"]) == 0
    assert json.loads((out / "summary.json").read_text()) == was
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1].startswith("distill: student solo accuracy")
    assert [line for line in lines if line.startswith("[")] == [f"[{k}/4] {what}: done, reused" for k, what in (
        (1, "the teacher's traces"), (2, "the student's solo accuracy before"), (3, "the student's SFT on the traces"),
        (4, "the student's solo accuracy after"))]


def test_a_rerun_needs_resume_and_the_same_config(finished, tiny_dir, tmp_path, capsys):
    out = shutil.copytree(finished[0], tmp_path / "run")
    assert distill(tiny_dir, out) == 2
    assert "is not empty; pass --resume" in capsys.readouterr().err
    assert distill(tiny_dir, out, "lr=0.5", "--resume") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--resume with a different config" in err[0] and "(lr)" in err[0]
    assert distill(tiny_dir, out, "--resume", "steps=4") == 2
    assert "steps=4" in capsys.readouterr().err


def test_a_second_writer_is_refused_naming_the_holder(tiny_dir, tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    holder = os.getppid()  # alive, and not this process
    (out / "run.lock").write_text(json.dumps({"pid": holder, "host": socket.gethostname(), "since": "now"}))
    assert distill(tiny_dir, out) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"is in use by PID {holder}" in err[0]
    assert sorted(p.name for p in out.iterdir()) == ["run.lock"]


def _other_vocab(tiny_dir, tmp_path):
    """The tiny model with two vocabulary entries swapped: another vocabulary of the same size."""
    other = shutil.copytree(tiny_dir, tmp_path / "other-vocab")
    tok = json.loads((other / "tokenizer.json").read_text())
    vocab = tok["model"]["vocab"]
    a, b = sorted(vocab, key=vocab.get)[300:302]
    vocab[a], vocab[b] = vocab[b], vocab[a]
    (other / "tokenizer.json").write_text(json.dumps(tok))
    return other


def test_a_student_of_another_vocabulary_is_refused_unless_retokenize(tiny_dir, tmp_path, capsys):
    from tandem.models.loading import load_tokenizer
    from tandem_app.distill.preflight import check_vocab

    other = _other_vocab(tiny_dir, tmp_path)
    assert distill(tiny_dir, tmp_path / "run", student=other) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "teacher and student vocabularies differ" in err[0] and "retokenize=true" in err[0]
    assert not (tmp_path / "run" / "config.json").exists()
    assert check_vocab(load_tokenizer(tiny_dir), load_tokenizer(other), retokenize=True) is False


def test_no_trace_left_after_filtering_is_one_line_with_the_counts(tiny_dir, tmp_path, capsys):
    assert distill(tiny_dir, tmp_path / "run", "only_correct=true") == 2  # the untrained model gets none right
    err = capsys.readouterr().err.strip().splitlines()[-1:]  # after the generation's progress bar
    assert err == ["error: distill: no traces left to fine-tune on after filtering 8 problems: the teacher got 0 of 8 "
                   "right (only_correct=true); loosen the filter or raise n_train_problems"]
    assert not (tmp_path / "run" / "student").exists()


@pytest.mark.parametrize("rule", ["drop", "cut"])
def test_traces_longer_than_the_students_context_are_counted_then_dropped_or_cut(rule, tiny_dir, tmp_path, capsys):
    student = shutil.copytree(tiny_dir, tmp_path / "short-student")
    config = json.loads((student / "config.json").read_text())
    # The training prompts hold 48 to 51 tokens and the untrained teacher writes all 24: four of eight traces
    # fit in 73 tokens; a test prompt and the eval's 16 tokens fit too.
    config["max_position_embeddings"] = 73
    (student / "config.json").write_text(json.dumps(config))
    assert distill(tiny_dir, tmp_path / "run", f"too_long={rule}", student=student) == 0
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    rows = [json.loads(line) for line in (tmp_path / "run" / "traces.jsonl").read_text().splitlines()]
    out = capsys.readouterr().out
    assert all(len(r["student_prompt_ids"]) + len(r["student_response_ids"]) <= 73 for r in rows)
    if rule == "drop":
        assert (s["dropped_too_long"], s["cut_too_long"], s["n_traces"]) == (4, 0, 4)
        assert "traces: 4 of 8 are longer than the student's context (73 tokens): dropped" in out
    else:
        assert (s["dropped_too_long"], s["cut_too_long"], s["n_traces"]) == (0, 4, 8)
        assert "traces: 4 of 8 are longer than the student's context (73 tokens): 4 cut to fit" in out
        assert sum(r["cut"] for r in rows) == 4


def test_help_explains_every_key(capsys):
    import dataclasses

    from tandem_app.distill.config import KEY_HELP, DistillConfig

    with pytest.raises(SystemExit):
        main(["distill", "--help"])
    out = capsys.readouterr().out
    fields = [f.name for f in dataclasses.fields(DistillConfig)]
    assert list(KEY_HELP) == fields
    assert all(f"\n  {name} " in out for name in fields)


def test_the_defaults_are_the_demos():
    from tandem_app.distill.config import DistillConfig
    from tandem_app.experiments.demo import demo_config

    demo, cfg = demo_config(), DistillConfig()
    assert cfg.temperature == demo.train.sampling.temperature
    assert cfg.eval_sampling == demo.eval.sampling and cfg.task == demo.task


def test_a_student_context_without_room_for_the_eval_is_refused_before_any_work(tiny_dir, tmp_path, capsys):
    student = shutil.copytree(tiny_dir, tmp_path / "short-student")
    config = json.loads((student / "config.json").read_text())
    config["max_position_embeddings"] = 40
    (student / "config.json").write_text(json.dumps(config))
    assert distill(tiny_dir, tmp_path / "run", student=student) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "the student's context (40 tokens) cannot hold the longest test prompt" in err[0]
    assert not (tmp_path / "run").exists()  # refused before any work: not even the folder is left
