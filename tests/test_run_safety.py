"""A run never ends green on a lie: one writer per folder, finite numbers or a stop, one line per mistake.

Each case is run as a user meets it: through `tandem-rlvr` (or the HF TRL example, or the
eval tool), reading the exit status and the one line on stderr.
"""

from __future__ import annotations

import errno
import json
import os
import runpy
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from tandem.io import run_lock
from tandem.errors import RunFailed, run_reporting_errors
from tandem.rollout.sampling import SamplingConfig
from tandem_app.commands.cli import main
from tandem_app.train.checkpoint import save_checkpoint
from tandem_app.train.grpo_trainer import GRPOTrainer
from tandem_app.train.train_config import TrainConfig

REPO = Path(__file__).resolve().parents[1]
SMALL = ["steps=3", "prompts_per_step=2", "group_size=4", "sampling.max_new_tokens=16", "save_every=2",
         "val_every=0", "n_val_problems=2", "n_train_problems=40"]
SFT_SMALL = ["steps=4", "batch_size=4", "warmup_steps=1", "n_train_problems=40", "n_val_problems=2",
             "max_new_tokens=8", "log_every=2", "save_every=2"]


def _train(tiny_dir, out, *overrides) -> list[str]:
    return ["train", *SMALL, *overrides, "--model", str(tiny_dir), "--out", str(out), "--no-progress"]


def _err(capsys) -> list[str]:
    return capsys.readouterr().err.strip().splitlines()


def _lock(folder: Path, pid: int, host: str | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / run_lock.LOCK_NAME).write_text(json.dumps({"pid": pid, "host": host or socket.gethostname(),
                                                         "since": "2026-11-27T10:00:00"}))


@pytest.fixture
def live_pid():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield proc.pid
    proc.kill()
    proc.wait()


@pytest.fixture
def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _process_state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def zombie_pid():
    """A child that has exited but is not reaped: what a SIGKILLed run's child stays in a container."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    while _process_state(proc.pid) != "Z" and time.monotonic() < deadline:
        time.sleep(0.05)
    yield proc.pid
    proc.wait()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux's /proc")
def test_a_lock_held_by_a_zombie_is_stale(zombie_pid):
    assert _process_state(zombie_pid) == "Z"
    os.kill(zombie_pid, 0)  # signal 0 still reaches it
    assert not run_lock._alive(zombie_pid)


def _cfg(tiny_dir, out, **kw) -> TrainConfig:
    base = dict(method="tandem", model=str(tiny_dir), out=str(out), steps=3, prompts_per_step=2, group_size=4,
                sampling=SamplingConfig(max_new_tokens=16), lr=1e-3, save_every=1, val_every=0, n_val_problems=2,
                n_train_problems=40)
    return TrainConfig(**{**base, **kw})


def _reward(text: str, gold: str) -> float:
    return float(len(text) % 3 == 0)  # variance on a random-init model


# --- one writer per output folder --------------------------------------------------------------


def test_a_second_train_on_a_folder_in_use_is_refused_naming_the_holder(tiny_dir, tmp_path, capsys, live_pid):
    out = tmp_path / "run"
    _lock(out, live_pid)
    assert main(_train(tiny_dir, out, "--resume")) == 2
    err = _err(capsys)
    assert len(err) == 1 and err[0].startswith(f"error: --out {out} is in use by PID {live_pid} on "
                                               f"{socket.gethostname()}")
    assert sorted(p.name for p in out.iterdir()) == ["run.lock"]  # nothing written beside the holder


RACER = """
import sys, time
from pathlib import Path
from tandem.io import run_lock
from tandem.errors import TandemError
folder, go = Path(sys.argv[1]), Path(sys.argv[2])
Path(sys.argv[3]).touch()  # ready
while not go.exists():
    time.sleep(0.001)
try:
    run_lock.acquire(folder)
except TandemError:
    sys.exit(3)
time.sleep(2)  # hold it while the others try
"""


def test_of_processes_racing_for_a_free_folder_exactly_one_wins(tmp_path):
    go, out = tmp_path / "go", tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    ready = [tmp_path / f"ready-{i}" for i in range(4)]
    racers = [subprocess.Popen([sys.executable, "-c", RACER, str(out), str(go), str(r)], env=env) for r in ready]
    while not all(r.exists() for r in ready):  # all four at the line, then one start signal
        time.sleep(0.01)
    go.touch()
    codes = sorted(p.wait(timeout=60) for p in racers)
    assert codes == [0, 3, 3, 3]


@pytest.mark.parametrize("command", ["sft", "demo"])
def test_sft_and_demo_refuse_a_folder_in_use(command, tiny_dir, tmp_path, capsys, live_pid):
    out = tmp_path / "run"
    _lock(out, live_pid)
    argv = (["sft", *SFT_SMALL, "--model", str(tiny_dir)] if command == "sft" else ["demo", "--quick"])
    assert main([*argv, "--out", str(out), "--no-progress"]) == 2
    err = _err(capsys)
    assert len(err) == 1 and f"is in use by PID {live_pid}" in err[0]


def test_a_lock_from_another_host_is_never_taken_over(tiny_dir, tmp_path, capsys):
    out = tmp_path / "run"
    _lock(out, 12345, host="elsewhere")
    assert main(_train(tiny_dir, out)) == 2
    assert _err(capsys) == [f"error: --out {out} is locked by PID 12345 on host elsewhere "
                            f"({out / 'run.lock'}); this host cannot check that process: delete the lock "
                            "if it has ended, or choose another --out"]


def test_a_stale_lock_is_taken_over_with_a_note(tiny_dir, tmp_path, capsys, dead_pid):
    out = tmp_path / "run"
    _lock(out, dead_pid)
    assert main(_train(tiny_dir, out, "steps=1")) == 0
    err = _err(capsys)
    assert f"note: {out / 'run.lock'}: PID {dead_pid} on {socket.gethostname()} is no longer running; " \
           "taking the folder over" in err
    assert not (out / "run.lock").exists()  # released at the end


def test_the_eval_refuses_an_out_dir_in_use(tiny_dir, tmp_path, capsys, live_pid):
    bench = tmp_path / "mini.jsonl"
    bench.write_text(json.dumps({"id": "m1", "problem": "What is 2+3?", "answer": "5"}) + "\n")
    out = tmp_path / "eval"
    _lock(out, live_pid)
    rc = main(["eval-solo", "--model", str(tiny_dir), "--benchmarks", str(bench), "--out-dir", str(out), "--n", "1",
               "--max-new-tokens", "4"])
    err = _err(capsys)
    assert rc == 2 and err[-1].startswith(f"error: --out-dir {out} is in use by PID {live_pid}")
    assert not (out / "mini.partial.jsonl").exists()


# --- one error line, exit 2, for bad input ----------------------------------------------------


@pytest.mark.parametrize("override, line", [
    ("save_every=0", "train: save_every must be >= 1, got 0"),
    ("n_val_problems=0", "train: n_val_problems must be >= 1, got 0"),
    ("lr=nan", "train: lr must be a finite number, got nan; set a finite value"),
    ("lr=1e309", "train: lr must be a finite number, got inf (a number beyond 1.8e308 reads as inf); set a finite "
                 "value"),
    ("lr=-0.01", "train: lr must be > 0, got -0.01"),
    ("sampling.temperature=inf", "train: sampling.temperature must be a finite number, got inf (a number beyond "
                                 "1.8e308 reads as inf); set a finite value"),
])
def test_bad_numbers_are_one_error_line_before_any_work(override, line, tiny_dir, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_train(tiny_dir, out, override)) == 2
    assert _err(capsys) == [f"error: {line}"]
    assert not out.exists()


@pytest.mark.parametrize("override, line", [
    ("save_every=0", "sft: save_every must be >= 1, got 0"),
    ("lr=nan", "sft: lr must be a finite number, got nan; set a finite value"),
])
def test_sft_bad_numbers_are_one_error_line(override, line, tiny_dir, tmp_path, capsys):
    assert main(["sft", *SFT_SMALL, override, "--model", str(tiny_dir), "--out", str(tmp_path / "s")]) == 2
    assert _err(capsys) == [f"error: {line}"]


@pytest.mark.parametrize("under", [False, True])
def test_out_naming_a_file_or_a_path_under_one_is_one_error_line(under, tiny_dir, tmp_path, capsys):
    file = tmp_path / "notes.txt"
    file.write_text("mine\n")
    out = file / "run" if under else file
    assert main(_train(tiny_dir, out)) == 2
    where = f"lies under {file}, which is a file" if under else "is a file"
    assert _err(capsys) == [f"error: --out {out} {where}; choose a folder path for --out"]
    assert file.read_text() == "mine\n"


# --- finite or stop ----------------------------------------------------------------------------


def _nan_reward_from_call(first_bad: int):
    calls = {"n": 0}

    def fn(text, gold):
        calls["n"] += 1
        return float("nan") if calls["n"] >= first_bad else _reward(text, gold)

    return fn


def test_a_non_finite_loss_stops_the_run_at_that_step_naming_the_last_good_checkpoint(tiny_dir, tmp_path, capsys):
    out = tmp_path / "run"
    per_step = 2 * 4
    trainer = GRPOTrainer(_cfg(tiny_dir, out), reward_fn=_nan_reward_from_call(per_step + 1), progress=False)
    assert run_reporting_errors(lambda _: trainer.train(), None) == 1
    (line,) = _err(capsys)
    assert line.startswith("error: step 2: loss nan, gradient norm nan is not finite; stopped before the update "
                           f"(last good checkpoint {out / 'checkpoint.pt'}, step 1)")
    assert all(torch.isfinite(p).all() for p in trainer.senior.parameters())  # the update was never applied
    state = torch.load(out / "checkpoint.pt", weights_only=False)
    assert state["step"] == 1
    assert not (out / "summary.json").exists() and not (out / "model").exists()


def test_no_checkpoint_holding_a_non_finite_tensor_is_written(tiny_dir, tmp_path):
    trainer = GRPOTrainer(_cfg(tiny_dir, tmp_path / "run"), progress=False)
    with torch.no_grad():
        next(trainer.senior.parameters())[0, 0] = float("inf")
    with pytest.raises(RunFailed, match="step 5: .* holds NaN or inf; no checkpoint written"):
        save_checkpoint(tmp_path / "run", trainer.senior, trainer.opt, 5)
    assert not (tmp_path / "run" / "checkpoint.pt").exists()
    assert not list((tmp_path / "run").glob("*.tmp"))


def test_sft_stops_at_a_non_finite_loss(tiny_dir, tmp_path, capsys, monkeypatch):
    from tandem_app.train import sft

    real, calls = sft.sft_loss, {"n": 0}

    def loss_nan_at_step_3(*a):
        calls["n"] += 1
        loss = real(*a)
        return loss * float("nan") if calls["n"] == 3 else loss

    monkeypatch.setattr(sft, "sft_loss", loss_nan_at_step_3)
    out = tmp_path / "sft"
    assert main(["sft", *SFT_SMALL, "--model", str(tiny_dir), "--out", str(out), "--no-progress"]) == 1
    (line,) = _err(capsys)
    assert line.startswith(f"error: step 3: loss nan, gradient norm nan is not finite; stopped before the update "
                           f"(last good checkpoint {out / 'checkpoint.pt'}, step 2)")


# --- a full disk at a checkpoint --------------------------------------------------------------


def test_disk_full_while_recording_the_checksum_leaves_no_tmp(tiny_dir, tmp_path, monkeypatch):
    from tandem_app.train import checkpoint

    trainer = GRPOTrainer(_cfg(tiny_dir, tmp_path / "run"), progress=False)

    def full(path, obj):
        Path(str(path) + ".tmp").write_text("{")  # what a write cut short by a full disk leaves
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(checkpoint, "write_json", full)
    with pytest.raises(RunFailed, match="No space left on device .no checkpoint saved yet."):
        save_checkpoint(tmp_path / "run", trainer.senior, trainer.opt, 1)
    assert not list((tmp_path / "run").glob("*.tmp")) and not (tmp_path / "run" / "checkpoint.pt").exists()


def test_disk_full_at_a_checkpoint_is_one_line_exit_1_and_leaves_no_tmp(tiny_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    real, calls = os.fsync, {"n": 0}

    def full_on_second_save(fd):
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(os, "fsync", full_on_second_save)
    assert main(_train(tiny_dir, out, "steps=4")) == 1
    assert _err(capsys) == [f"error: cannot write checkpoint {out / 'checkpoint.pt'} at step 4: No space left on "
                            f"device (last good checkpoint {out / 'checkpoint.pt'}, step 2); free space and "
                            "resume with --resume"]
    assert not list(out.rglob("*.tmp"))
    assert torch.load(out / "checkpoint.pt", weights_only=False)["step"] == 2
    monkeypatch.setattr(os, "fsync", real)
    assert main(_train(tiny_dir, out, "steps=4", "--resume")) == 0  # space freed: the run goes on


# --- Ctrl-C and the end-of-run summary ---------------------------------------------------------


def test_ctrl_c_says_what_was_kept_and_the_command_that_continues(tiny_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    real = GRPOTrainer.step

    def interrupted_in_step_3(self, step):
        if step == 2:
            raise KeyboardInterrupt
        return real(self, step)

    monkeypatch.setattr(GRPOTrainer, "step", interrupted_in_step_3)
    assert main(_train(tiny_dir, out, "steps=4")) == 130
    command = f"tandem-rlvr train --out {out} --resume"
    assert _err(capsys) == [f"interrupted: kept {out / 'checkpoint.pt'} (step 2 of 4) and {out / 'metrics.jsonl'} "
                            f"through step 2; continue with: {command}"]
    monkeypatch.setattr(GRPOTrainer, "step", real)
    assert main([*command.split()[1:], "--no-progress"]) == 0  # exactly that command
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [0, 1, 2, 3, 4]


def test_ctrl_c_in_sft_says_what_was_kept_and_the_command_that_continues(tiny_dir, tmp_path, capsys, monkeypatch):
    from tandem_app.train import sft

    real, calls = sft.sft_loss, {"n": 0}

    def interrupted_in_step_3(*a):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(*a)

    monkeypatch.setattr(sft, "sft_loss", interrupted_in_step_3)
    out = tmp_path / "sft"
    assert main(["sft", *SFT_SMALL, "--model", str(tiny_dir), "--out", str(out), "--no-progress"]) == 130
    assert _err(capsys) == [f"interrupted: kept {out / 'checkpoint.pt'} (step 2 of 4) and {out / 'metrics.jsonl'} "
                            f"through step 2; continue with: tandem-rlvr sft --out {out} --resume"]
    monkeypatch.setattr(sft, "sft_loss", real)
    assert main(["sft", "--out", str(out), "--resume", "--no-progress"]) == 0


def test_ctrl_c_in_the_demo_names_the_command_that_continues(tmp_path, capsys, monkeypatch):
    from tandem.errors import RunInterrupted
    from tandem_app.experiments import demo

    def interrupted(*a, **kw):
        raise RunInterrupted("kept D/tandem/checkpoint.pt (step 2 of 3) and D/tandem/metrics.jsonl through step 2")

    monkeypatch.setattr(demo, "run_demo", interrupted)
    assert main(["demo", "--quick", "--seed", "2", "--out", str(tmp_path / "d")]) == 130
    assert _err(capsys) == ["interrupted: kept D/tandem/checkpoint.pt (step 2 of 3) and D/tandem/metrics.jsonl through "
                            f"step 2; continue with: tandem-rlvr demo --quick --out {tmp_path / 'd'} --seed 2"]


def test_train_ends_with_a_summary_line_and_summary_json_holds_the_same(tiny_dir, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(_train(tiny_dir, out, "steps=2")) == 0
    summary = json.loads((out / "summary.json").read_text())
    last = json.loads((out / "metrics.jsonl").read_text().splitlines()[-1])
    assert summary["final_reward"] == last["reward_mean"] and summary["val_acc"] == last["val_acc"]
    assert summary["senior_fraction"] == last["senior_token_fraction"] and 0 < summary["senior_fraction"] < 1
    assert summary["wall_seconds"] > 0 and summary["model"] == str(out / "model")
    printed = capsys.readouterr().out.strip().splitlines()[-1]
    assert printed == (f"tandem: 2 steps in {summary['wall_seconds']:.0f} s; final reward {summary['final_reward']:.3f}"
                       f", validation accuracy {summary['val_acc']:.3f}, senior fraction "
                       f"{summary['senior_fraction']:.3f}; senior in {out / 'model'}")


def test_sft_ends_with_a_summary_line(tiny_dir, tmp_path, capsys):
    out = tmp_path / "sft"
    assert main(["sft", *SFT_SMALL, "--model", str(tiny_dir), "--out", str(out), "--no-progress"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert {"final_loss", "val_greedy_acc", "wall_seconds", "model"} <= set(summary) and summary["final_loss"] > 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == (
        f"sft: 4 steps in {summary['wall_seconds']:.0f} s; final loss {summary['final_loss']:.3f}, validation "
        f"accuracy {summary['val_greedy_acc']:.3f}; base in {out / 'model'}")


# --- the HF TRL example -----------------------------------------------------------------------


def _example(argv: list[str]) -> int:
    return runpy.run_path(str(REPO / "scripts" / "hf_trl_tandem.py"))["main"](argv)


@pytest.mark.parametrize("flags, line", [  # TrainConfig's own checks: the example parses `tandem-rlvr train`'s keys
    (["lr=1e309"], "train: lr must be a finite number, got inf (a number beyond 1.8e308 reads as inf); set a finite "
                   "value"),
    (["lr=nan"], "train: lr must be a finite number, got nan; set a finite value"),
    (["lr=-0.01"], "train: lr must be > 0, got -0.01"),
    (["sampling.max_new_tokens=0"], "max_new_tokens must be >= 1, got 0"),
])
def test_the_hf_example_refuses_bad_numbers_in_one_line(flags, line, tmp_path, capsys):
    assert _example([*flags, "--out", str(tmp_path / "x")]) == 2
    assert _err(capsys) == [f"error: {line}"]
    assert not (tmp_path / "x").exists()


def test_the_hf_example_refuses_a_folder_in_use_and_a_file(tmp_path, capsys, live_pid):
    _lock(tmp_path / "run", live_pid)
    assert _example(["--out", str(tmp_path / "run")]) == 2
    assert f"is in use by PID {live_pid}" in _err(capsys)[0]
    (tmp_path / "f").write_text("")
    assert _example(["--out", str(tmp_path / "f")]) == 2
    assert _err(capsys) == [f"error: --out {tmp_path / 'f'} is a file; choose a folder path for --out"]


def test_the_hf_example_stops_at_a_non_finite_loss():
    pytest.importorskip("transformers")
    from types import SimpleNamespace

    from hf_grpo.metrics_callback import MetricsCallback

    rows = []
    logger = SimpleNamespace(log=lambda step, row: rows.append((step, row)))
    rollout = SimpleNamespace(last_stats=SimpleNamespace(senior_token_fraction=0.5))
    callback = MetricsCallback(logger, rollout, lambda: 0.0, 0, 10)
    control = SimpleNamespace(should_training_stop=False)
    callback.on_log(None, SimpleNamespace(global_step=1), control, logs={"reward": 0.5, "loss": 0.1, "grad_norm": 1.0})
    assert not control.should_training_stop and callback.non_finite is None
    callback.on_log(None, SimpleNamespace(global_step=2), control, logs={"reward": 0.5, "loss": float("nan"),
                                                                         "grad_norm": 2.0})
    assert control.should_training_stop and callback.non_finite == "step 2: loss nan"
