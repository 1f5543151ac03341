"""A refused run leaves the filesystem as it was: no folder, no `config.json`, no empty `metrics.jsonl`.

Issue 59: with `tensorboard=true` and the package missing, the one-line error was right but
`config.json` and an empty `metrics.jsonl` stayed, and the retry was refused as "not empty";
`demo --out` mixed its files into an unrelated run's folder; `train --out MISSING --resume` said
"train needs model=DIR". Each case runs a command as a user does (`tandem-rlvr ...`), expects one
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
