"""A refused run leaves the filesystem as it was: no folder, no `config.json`, no empty `metrics.jsonl`.

Issue 59: with `tensorboard=true` and the package missing, the one-line error was right but
`config.json` and an empty `metrics.jsonl` stayed, and the retry was refused as "not empty";
`demo --out` mixed its files into an unrelated run's folder; `train --out MISSING --resume` said
"train needs model=DIR", and `train --out DIR --resume` on a folder holding someone else's files (no
config.json, no checkpoint) trained from scratch into it (so did `sft` and `distill`). Each case runs a command as a user does (`tandem-rlvr ...`), expects one
`error:` line and exit status 2, and compares a snapshot of the tree (every path, every file's
bytes) before and after. No case trains a model.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from tandem_app.commands.cli import main

SFT = ["steps=2", "batch_size=2", "n_train_problems=8", "n_val_problems=2"]


def snapshot(root: Path) -> dict[str, str]:
    """Every path under `root`: a folder as 'dir', a file as its bytes' sha256."""
    return {str(p.relative_to(root)): "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*"))}


def _unrelated_run(folder: Path) -> None:
    """A folder holding another run's files (not the command's own run)."""
    folder.mkdir()
    (folder / "metrics.jsonl").write_text('{"step": 1, "loss": 0.5}\n')
    (folder / "notes.txt").write_text("someone else's run\n")


def _missing(monkeypatch, module: str) -> None:
    monkeypatch.setitem(sys.modules, module, None)  # its import fails, as when the package is not installed


CASES = {
    # name: (argv from (tiny model dir, tmp), set-up of tmp and the environment, a word of the error line)
    "train tensorboard=true, tensorboard missing": (
        lambda m, t: ["train", "tensorboard=true", "--model", str(m), "--out", str(t / "run")],
        lambda t, mp: _missing(mp, "torch.utils.tensorboard"), "pip install tensorboard"),
    "train wandb=true, wandb missing": (
        lambda m, t: ["train", "wandb=true", "--model", str(m), "--out", str(t / "run")],
        lambda t, mp: _missing(mp, "wandb"), "pip install wandb"),
    "sft tensorboard=true, tensorboard missing": (
        lambda m, t: ["sft", *SFT, "tensorboard=true", "--model", str(m), "--out", str(t / "run")],
        lambda t, mp: _missing(mp, "torch.utils.tensorboard"), "pip install tensorboard"),
    "sft wandb=true, wandb missing": (
        lambda m, t: ["sft", *SFT, "wandb=true", "--model", str(m), "--out", str(t / "run")],
        lambda t, mp: _missing(mp, "wandb"), "pip install wandb"),
    "train --resume, no such folder": (
        lambda m, t: ["train", "--out", str(t / "missing"), "--resume"], None, "nothing to resume in"),
    "train --resume, an empty folder": (
        lambda m, t: ["train", "--out", str(t / "empty"), "--resume"], lambda t, mp: (t / "empty").mkdir(),
        "nothing to resume in"),
    "sft --resume, no such folder": (
        lambda m, t: ["sft", "--out", str(t / "missing"), "--resume"], None, "nothing to resume in"),
    "distill --resume, no such folder": (
        lambda m, t: ["distill", "--out", str(t / "missing"), "--resume"], None, "nothing to resume in"),
    "train --resume, another run's folder": (
        lambda m, t: ["train", "--model", str(m), "--out", str(t / "other"), "--resume"],
        lambda t, mp: _unrelated_run(t / "other"), "nothing to resume in"),
    "sft --resume, another run's folder": (
        lambda m, t: ["sft", *SFT, "--model", str(m), "--out", str(t / "other"), "--resume"],
        lambda t, mp: _unrelated_run(t / "other"), "nothing to resume in"),
    "distill --resume, another run's folder": (
        lambda m, t: ["distill", "--teacher", str(m), "--student", str(m), "--out", str(t / "other"), "--resume"],
        lambda t, mp: _unrelated_run(t / "other"), "nothing to resume in"),
    "train into another run's folder": (
        lambda m, t: ["train", "--model", str(m), "--out", str(t / "other")], lambda t, mp: _unrelated_run(t / "other"),
        "is not empty"),
    "distill with a data file that is missing": (
        lambda m, t: ["distill", "--teacher", str(m), "--student", str(m), "--out", str(t / "run"),
                      f"data={t / 'no.jsonl'}", f"test_data={t / 'no-test.jsonl'}"], None, "no.jsonl"),
    "demo into another run's folder": (
        lambda m, t: ["demo", "--quick", "--out", str(t / "other")], lambda t, mp: _unrelated_run(t / "other"),
        "holds no demo run"),
    "demo --seeds into another run's folder": (
        lambda m, t: ["demo", "--quick", "--seeds", "0", "1", "--out", str(t / "other")],
        lambda t, mp: _unrelated_run(t / "other"), "holds no demo run"),
    "rollout with prompts that are missing": (
        lambda m, t: ["rollout", "--senior", str(m), "--junior", str(m), "--prompts", str(t / "no.jsonl"),
                      "--out", str(t / "new" / "out.jsonl")], None, "no.jsonl"),
    "eval-solo with an unknown benchmark": (
        lambda m, t: ["eval-solo", "--model", str(m), "--benchmarks", "no_such_benchmark", "--out-dir",
                      str(t / "new")], None, "no_such_benchmark"),
    "eval-handoff with an unknown benchmark": (
        lambda m, t: ["eval-handoff", "--senior", str(m), "--junior", str(m), "--benchmarks", "no_such_benchmark",
                      "--out-dir", str(t / "new")], None, "no_such_benchmark"),
    "eval-legibility with samples that are missing": (
        lambda m, t: ["eval-legibility", "--senior-samples", str(t / "no.jsonl"), "--junior", str(m),
                      "--out", str(t / "new" / "leg.json")], None, "no.jsonl"),
    "eval-plot with a run that is missing": (
        lambda m, t: ["eval-plot", "--run", f"a={t / 'no-run'}", "--out", str(t / "new" / "p.png")], None, "no-run"),
    "eval-table with a checkpoint that is missing": (
        lambda m, t: ["eval-table", "--checkpoint", f"a={t / 'no-ckpt'}", "--out", str(t / "new" / "t.md")], None,
        "no-ckpt"),
    "eval-figures with a checkpoint that is missing": (
        lambda m, t: ["eval-figures", "--checkpoint", f"a={t / 'no-ckpt'}", "--out", str(t / "new")], None,
        "no-ckpt"),
    "build-tiny under a file": (
        lambda m, t: ["build-tiny", "--out", str(t / "file" / "tiny")], lambda t, mp: (t / "file").write_text("x"),
        "is a file"),
    "boundaries with a tokenizer that is missing": (
        lambda m, t: ["boundaries", "--tokenizer", str(t / "no-tok"), "--strategy", "word", "--out",
                      str(t / "new" / "ids.json")], None, "no-tok"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_refused_run_leaves_the_filesystem_as_it_was(name, tiny_dir, tmp_path, monkeypatch, capsys):
    argv, setup, word = CASES[name]
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # a default output folder (runs/...) would land here, inside the snapshot
    if setup:
        setup(work, monkeypatch)
    before, model_before = snapshot(work), snapshot(tiny_dir)
    assert main([*argv(tiny_dir, work), "--no-progress"] if name.startswith(("train", "sft", "distill", "demo"))
                else argv(tiny_dir, work)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and word in err[0], err
    assert snapshot(work) == before
    assert snapshot(tiny_dir) == model_before


def test_the_retry_after_a_refused_logger_is_not_refused_as_not_empty(tiny_dir, tmp_path, monkeypatch, capsys):
    """The issue's sequence: refused for the missing package, then the same --out is still a new run's."""
    out = tmp_path / "run"
    _missing(monkeypatch, "torch.utils.tensorboard")
    assert main(["sft", *SFT, "tensorboard=true", "--model", str(tiny_dir), "--out", str(out), "--no-progress"]) == 2
    assert not out.exists()
    capsys.readouterr()


@pytest.mark.parametrize("command, expected", [
    ("train", "no config.json, checkpoint.pt or checkpoint.prev.pt"),
    ("sft", "no config.json, checkpoint.pt or checkpoint.prev.pt"),
    ("distill", "no config.json"),
])
def test_resume_names_what_a_run_folder_would_hold(command, expected, tiny_dir, tmp_path, capsys):
    """`--resume` into a folder of someone else's files says what a run of this command leaves there (its saved
    config, for the trainers also its checkpoints) instead of starting a new run among those files."""
    other = tmp_path / "other"
    _unrelated_run(other)
    models = ["--teacher", str(tiny_dir), "--student", str(tiny_dir)] if command == "distill" else ["--model",
                                                                                                     str(tiny_dir)]
    assert main([command, *models, "--out", str(other), "--resume", "--no-progress"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: nothing to resume in {other}: it holds no run ({expected}); point --out at the run's folder, or "
        "drop --resume and choose a new --out")


def test_the_names_resume_looks_for_are_the_ones_runs_write():
    """The torch-free check reads the same names the trainers and distill write (no drift between the two)."""
    from tandem_app.commands.config_args import CHECKPOINTS, SAVED_CONFIG
    from tandem_app.distill.run import CONFIG
    from tandem_app.train.checkpoint import CHECKPOINT_NAME, PREVIOUS_NAME
    from tandem_app.train.resume import CONFIG_NAME

    assert SAVED_CONFIG == CONFIG_NAME == CONFIG and CHECKPOINTS == (CHECKPOINT_NAME, PREVIOUS_NAME)
