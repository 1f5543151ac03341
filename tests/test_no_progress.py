"""`--no-progress` silences every bar and per-step line: ours and the libraries' (transformers' shard writer);
the demo still says which phase it is in, one header each."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tandem_app.commands.cli import main
from tandem_app.experiments import partner_demo
from tandem_app.experiments.demo import TEST_SPLIT, demo_config

BAR_MARKS = ("%|", "it/s", "s/it", "sample/s", "█", "▏", "▎", "▍", "▌", "▋", "▊", "▉")  # tqdm's bars, any unit


def run_cli(*argv: str, cwd) -> subprocess.CompletedProcess:
    """A separate process: the library's bar setting is process-wide, and the test must see what a user sees."""
    return subprocess.run([sys.executable, "-m", "tandem_app.commands.cli", *argv], capture_output=True, text=True,
                          cwd=cwd, timeout=600)


def test_sft_with_no_progress_prints_no_bar_and_no_step_line(tiny_dir, tmp_path):
    quiet = run_cli("sft", "--model", str(tiny_dir), "--out", "quiet", "--no-progress", "steps=4", "batch_size=4",
                    "n_val_problems=2", "log_every=1", "save_every=4", "max_new_tokens=8", "n_train_problems=64", cwd=tmp_path)
    assert quiet.returncode == 0, quiet.stderr
    shown = quiet.stdout + quiet.stderr
    assert "step " not in shown and "%|" not in shown and "Writing model shards" not in shown, shown
    loud = run_cli("sft", "--model", str(tiny_dir), "--out", "loud", "steps=4", "batch_size=4", "n_val_problems=2",
                   "log_every=1", "save_every=4", "max_new_tokens=8", "n_train_problems=64", cwd=tmp_path)
    assert loud.returncode == 0 and "step     4 |" in loud.stdout + loud.stderr  # the same run, with its lines


def test_distill_with_no_progress_prints_its_phase_lines_and_no_bar(tiny_dir, tmp_path):
    small = ["n_train_problems=8", "max_new_tokens=24", "steps=3", "batch_size=4", "save_every=3",
             "n_eval_problems=6", "n_samples=2", "eval_sampling.max_new_tokens=16"]
    run = run_cli("distill", "--teacher", str(tiny_dir), "--student", str(tiny_dir), "--out", "d", "--no-progress",
                  *small, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    shown = run.stdout + run.stderr
    assert "%|" not in shown and "step " not in shown, shown  # the traces' and evals' bars, the SFT's lines
    assert [line[:5] for line in run.stdout.splitlines() if line.startswith("[")] == ["[1/4]", "[2/4]", "[3/4]",
                                                                                     "[4/4]"]


def test_the_demo_with_no_progress_prints_one_header_per_phase_and_no_bar(quick_demo, tmp_path, capfd):
    # A copy of the session's demo whose eval must be finished again (each model's eval is cached: seconds).
    run = tmp_path / "demo"
    shutil.copytree(quick_demo, run)
    (run / "eval" / "results.json").unlink()
    (run / TEST_SPLIT).unlink()
    capfd.readouterr()
    assert main(["demo", "--quick", "--out", str(run), "--no-progress"]) == 0
    out, err = capfd.readouterr()
    assert [line for line in out.splitlines() if line.startswith("demo demo: ")] == [
        "demo demo: evaluating base, GRPO and TRL seniors (eval) ..."]
    assert not any(bar in out + err for bar in BAR_MARKS), out + err
    assert (run / TEST_SPLIT).is_file()  # written again, as every demo does


def test_the_partner_runs_eval_is_as_quiet_as_its_training(quick_demo, monkeypatch):
    # The --partner run's evaluation once ignored --no-progress: each senior's eval drew its bars.
    class Stop(Exception):
        pass

    seen = []

    def evaluate_senior(*args, progress=True, **kwargs):
        seen.append(progress)
        raise Stop

    monkeypatch.setattr(partner_demo, "evaluate_senior", evaluate_senior)
    with pytest.raises(Stop):
        partner_demo.evaluate_partners(demo_config(quick=True), quick_demo, ["grpo"], progress=False)
    assert seen == [False]
