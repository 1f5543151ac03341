"""End-to-end solo and handoff runs on the tiny model zoo, resuming, plots, legibility, and the CLIs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tandem.io.jsonl import read_jsonl
from tandem_eval.analysis import legibility
from tandem_eval.core import tool
from tandem_eval.paper import plot
from tandem_eval.MATH import eval_solo, eval_step_handoff

REPO = Path(__file__).resolve().parents[1]
SAMPLE_KEYS = {"problem_id", "benchmark", "source", "sample", "gold", "extracted_answer", "correct",
               "finish_reason", "num_tokens", "text", "response_ids", "prompt_ids",
               "answer_visible", "final_author", "hit_budget"}  # the last three: tandem_eval.core.leak
SMALL = ["--n", "2", "--max-new-tokens", "16", "--temperature", "1.0", "--top-k", "0", "--top-p", "1.0"]


@pytest.fixture(scope="module")
def mini_benchmark(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("data") / "mini.jsonl"
    rows = [{"id": "m1", "problem": "What is 2+3?", "answer": "5", "source": "mini"},
            {"id": "m2", "problem": "Mia has 4 apples and buys 3 more. How many?", "answer": "7", "source": "mini"}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture(scope="module")
def solo_run(tiny_dir, mini_benchmark, shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("solo")
    args = ["--model", str(tiny_dir), "--benchmarks", f"{mini_benchmark},aime_24_26", "--max-problems", "1",
            "--data-dir", str(shared_data), "--out-dir", str(out), *SMALL]
    assert eval_solo.main(args) == 0
    return out, args


@pytest.fixture(scope="module")
def handoff_run(tiny_dir, tiny_dir_seed1, mini_benchmark, tmp_path_factory):
    out = tmp_path_factory.mktemp("handoff")
    args = ["--senior", str(tiny_dir), "--junior", str(tiny_dir_seed1), "--benchmarks", str(mini_benchmark),
            "--out-dir", str(out), *SMALL]
    assert eval_step_handoff.main(args) == 0
    return out


def test_solo_run_writes_one_valid_row_per_sample(solo_run):
    out, _ = solo_run
    rows = read_jsonl(out / "mini.samples.jsonl")
    assert len(rows) == 2  # 1 problem x n=2
    assert all(set(r) == SAMPLE_KEYS for r in rows)
    assert [r["sample"] for r in rows] == [0, 1]
    assert all(r["num_tokens"] == len(r["response_ids"]) <= 16 for r in rows)


def test_solo_summary_records_config_and_pass_at_k(solo_run):
    out, _ = solo_run
    summary = json.loads((out / "aime_24_26.summary.json").read_text())
    assert summary["config"]["sampling"] == {"temperature": 1.0, "top_p": 1.0, "top_k": 0, "max_new_tokens": 16,
                                             "seed": 0}
    assert set(summary["pass_at_k"]) == {"pass@1", "pass@2"}
    assert summary["num_problems"] == 1 and summary["num_samples"] == 2
    overall = json.loads((out / "summary.json").read_text())
    assert set(overall["benchmarks"]) == {"mini", "aime_24_26"}
    assert set(overall) >= {"macro", "micro", "ks", "config"}


def test_default_sampling_is_the_papers_eval():
    from tandem_eval.core.run_config import EvalRun

    s = EvalRun.from_args(tool.parser(eval_solo).parse_args(["--model", "m", "--out-dir", "o"])).sampling
    assert (s.temperature, s.top_p, s.top_k, s.max_new_tokens) == (0.7, 0.8, 20, 3000)


def test_handoff_run_records_authorship(handoff_run):
    rows = read_jsonl(handoff_run / "mini.samples.jsonl")
    assert len(rows) == 4
    for r in rows:
        assert set(r) == SAMPLE_KEYS | {"authorship_mask", "num_handoffs", "senior_fraction", "cut_by_max_rounds"}
        assert len(r["authorship_mask"]) == r["num_tokens"] and r["authorship_mask"][0] == 1
    summary = json.loads((handoff_run / "mini.summary.json").read_text())
    assert summary["phase"] == "handoff" and "senior_token_fraction" in summary


def test_rerun_with_the_same_config_skips_finished_benchmarks(solo_run, capsys):
    out, args = solo_run
    before = (out / "mini.samples.jsonl").stat().st_mtime_ns
    assert eval_solo.main(args) == 0
    assert (out / "mini.samples.jsonl").stat().st_mtime_ns == before
    assert "already done" in capsys.readouterr().err


def test_rerun_with_another_config_is_refused_in_one_line(solo_run, capsys):
    out, args = solo_run
    assert eval_solo.main([*args, "--seed", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "sampling.seed" in err and "--overwrite" in err and "\n" not in err


@pytest.mark.parametrize("extra, message", [
    (["--model", "no/such/dir", "--n", "0"], "--n must be >= 1"),
    (["--model", "./no-such-model"], "no-such-model"),
    (["--model", "m", "--benchmarks", "aime2099"], "unknown benchmark"),
    (["--model", "m", "--temperature", "-1"], "--temperature"),
])
def test_bad_input_gives_one_error_line_and_exit_2(extra, message, tmp_path, mini_benchmark, capsys):
    args = ["--out-dir", str(tmp_path / "o"), "--benchmarks", str(mini_benchmark), *extra]
    assert eval_solo.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and "\n" not in err


@pytest.mark.parametrize("command", [
    [sys.executable, "tandem_eval/MATH/eval_solo.py", "--help"],
    [sys.executable, "-m", "tandem_eval.MATH.eval_sentence_handoff", "--help"],
    [sys.executable, "-m", "tandem_eval.MATH.eval_step_handoff", "--help"],
    [sys.executable, "tandem_eval/MATH/eval_sentence_handoff.py", "--help"],
    [sys.executable, "-m", "tandem_eval.analysis.legibility", "--help"],
    [sys.executable, "-m", "tandem_eval.paper.plot", "--help"],
])
def test_scripts_run_as_files_and_modules_and_explain_their_flags(command):
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "--out" in done.stdout


def test_plot_draws_a_png_from_solo_and_handoff_summaries(solo_run, handoff_run, tmp_path):
    out = tmp_path / "passk.png"
    assert plot.main(["--run", f"tiny={solo_run[0]}", "--run", f"tiny={handoff_run}", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_legibility_and_drift_read_eval_outputs(solo_run, tiny_dir, tiny_dir_seed1, tmp_path):
    out = tmp_path / "legibility.json"
    assert legibility.main(["--senior-samples", str(solo_run[0]), "--junior", str(tiny_dir_seed1),
                            "--junior-samples", str(solo_run[0]), "--tokenizer", str(tiny_dir),
                            "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["legibility"]["n_scored"] == 4 and result["legibility"]["mean_ce"] > 0
    assert result["drift"]["js_bits"] == 0.0  # the same samples on both sides


def test_tandem_rlvr_subcommands_take_the_scripts_flags(solo_run, capsys):
    import argparse

    from tandem_app.commands import eval as eval_commands

    parser = argparse.ArgumentParser(prog="tandem-rlvr")
    sub = parser.add_subparsers(dest="command")
    for name in eval_commands.TOOLS:
        eval_commands.register_command(sub, name, f"{name} help")
    out, solo_args = solo_run
    args = parser.parse_args(["eval-solo", *solo_args])
    assert args.func(args) == 0  # resumes: every benchmark is already done
    assert "already done" in capsys.readouterr().err
    handoff = parser.parse_args(["eval-handoff", "--senior", "a", "--junior", "b", "--out-dir", "o",
                                 "--preset", "paper"])
    assert handoff.preset == "paper" and handoff.n is None  # left out: filled from the preset at run time
    assert parser.parse_args(["eval-plot", "--run", "a=b", "--out", "c.png"]).run == ["a=b"]
