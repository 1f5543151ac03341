"""Checkpoints and resume: an interrupted run continues bit-for-bit."""

from __future__ import annotations

import json

import pytest
import torch

from tandem.errors import TandemError
from tandem.rollout.sampling import SamplingConfig
from tandem_app.train.grpo_trainer import GRPOTrainer
from tandem_app.train.train_config import TrainConfig

STEPS = 4


def _text_reward(text: str, gold: str) -> float:
    """A reward with variance on a random-init model (the task reward would be all zero)."""
    return float(len(text) % 3 == 0)


class _Crash(RuntimeError):
    pass


def _crashing_reward(after_calls: int):
    calls = {"n": 0}

    def fn(text, gold):
        calls["n"] += 1
        if calls["n"] > after_calls:
            raise _Crash("simulated crash")
        return _text_reward(text, gold)

    return fn


def _cfg(tiny_dir, out, **kw) -> TrainConfig:
    base = dict(
        method="tandem",
        model=str(tiny_dir),
        out=str(out),
        steps=STEPS,
        prompts_per_step=2,
        group_size=4,
        sampling=SamplingConfig(max_new_tokens=20),
        lr=1e-3,
        save_every=2,
        val_every=0,
        n_val_problems=2,
        n_train_problems=40,
    )
    return TrainConfig(**{**base, **kw})


def _rows(out) -> list[dict]:
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith("time_")} for r in rows]


def test_interrupted_run_resumes_bit_for_bit(tiny_dir, tmp_path):
    straight = GRPOTrainer(_cfg(tiny_dir, tmp_path / "straight"), reward_fn=_text_reward, progress=False)
    straight.train()

    per_step = 2 * 4  # reward calls per step
    crashed = GRPOTrainer(
        _cfg(tiny_dir, tmp_path / "resumed"), reward_fn=_crashing_reward(3 * per_step), progress=False
    )
    with pytest.raises(_Crash):
        crashed.train()  # dies during step 4, after the checkpoint of step 2
    resumed = GRPOTrainer(_cfg(tiny_dir, tmp_path / "resumed"), reward_fn=_text_reward, progress=False)
    resumed.train(resume=True)

    initial = GRPOTrainer(_cfg(tiny_dir, tmp_path / "unused"), reward_fn=_text_reward, progress=False)
    changed = [not torch.equal(a, b) for a, b in zip(straight.senior.parameters(), initial.senior.parameters())]
    assert any(changed), "training did not move the parameters; the comparison would be vacuous"
    for a, b in zip(straight.senior.parameters(), resumed.senior.parameters()):
        assert torch.equal(a, b)
    assert _rows(tmp_path / "straight") == _rows(tmp_path / "resumed")
    assert [r["step"] for r in _rows(tmp_path / "resumed")] == list(range(STEPS + 1))


def test_checkpoint_is_written_atomically(tiny_dir, tmp_path):
    GRPOTrainer(_cfg(tiny_dir, tmp_path / "run", steps=2), reward_fn=_text_reward, progress=False).train()
    names = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert "checkpoint.pt" in names and (tmp_path / "run" / "model" / "config.json").is_file()
    assert not [n for n in names if n.endswith(".tmp")]
    state = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)
    assert state["step"] == 2 and {"model", "optimizer", "rng"} <= set(state)
    loss = state["extra"]["config"]["loss"]  # the loss settings travel with every checkpoint
    assert (loss["junior_token_loss_weight"], loss["loss_denominator"]) == (0.0, "senior_tokens")


def test_resume_under_another_loss_denominator_is_an_error(tiny_dir, tmp_path):
    GRPOTrainer(_cfg(tiny_dir, tmp_path / "run", steps=1), reward_fn=_text_reward, progress=False).train()
    cfg = _cfg(tiny_dir, tmp_path / "run", steps=2)
    cfg.loss.loss_denominator = "all_response_tokens"
    with pytest.raises(TandemError, match="loss.loss_denominator"):
        GRPOTrainer(cfg, progress=False).train(resume=True)


def test_resume_with_a_changed_config_is_an_error(tiny_dir, tmp_path):
    GRPOTrainer(_cfg(tiny_dir, tmp_path / "run", steps=2), reward_fn=_text_reward, progress=False).train()
    with pytest.raises(TandemError, match="lr"):
        GRPOTrainer(_cfg(tiny_dir, tmp_path / "run", lr=5e-4), progress=False).train(resume=True)


def test_existing_run_directory_without_resume_is_an_error(tiny_dir, tmp_path):
    GRPOTrainer(_cfg(tiny_dir, tmp_path / "run", steps=1), reward_fn=_text_reward, progress=False).train()
    with pytest.raises(TandemError, match="--resume"):
        GRPOTrainer(_cfg(tiny_dir, tmp_path / "run", steps=1), progress=False).train()


# --- checkpoints that prove themselves -----------------------------------------------------------


def _notes(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("note: ")]


def _params(trainer) -> list[torch.Tensor]:
    return [p.detach().clone() for p in trainer.senior.parameters()]


def test_each_checkpoint_is_recorded_with_its_sha256_and_the_previous_one_is_kept(tiny_dir, tmp_path):
    import hashlib

    out = tmp_path / "run"
    GRPOTrainer(_cfg(tiny_dir, out, steps=2, save_every=1), reward_fn=_text_reward, progress=False).train()
    index = json.loads((out / "checkpoint.json").read_text())["verified"]
    digest = {name: hashlib.sha256((out / name).read_bytes()).hexdigest() for name in ("checkpoint.pt",
                                                                                       "checkpoint.prev.pt")}
    assert index[:2] == [{"sha256": digest["checkpoint.pt"], "step": 2},
                         {"sha256": digest["checkpoint.prev.pt"], "step": 1}]


def test_a_damaged_checkpoint_is_refused_and_the_previous_one_resumes_exactly(tiny_dir, tmp_path, capsys):
    straight = GRPOTrainer(_cfg(tiny_dir, tmp_path / "straight", steps=3, save_every=1), reward_fn=_text_reward,
                           progress=False)
    straight.train()
    out = tmp_path / "run"
    GRPOTrainer(_cfg(tiny_dir, out, steps=2, save_every=1), reward_fn=_text_reward, progress=False).train()
    with (out / "checkpoint.pt").open("r+b") as f:  # 4 KB overwritten in the middle, as a bad disk would
        f.seek((out / "checkpoint.pt").stat().st_size // 2)
        f.write(b"\x7f" * 4096)
    capsys.readouterr()
    resumed = GRPOTrainer(_cfg(tiny_dir, out, steps=3, save_every=1), reward_fn=_text_reward, progress=False)
    resumed.train(resume=True)
    notes = _notes(capsys)
    assert f"note: {out / 'checkpoint.pt'} does not match the sha256 recorded in {out / 'checkpoint.json'} " \
           "(damaged); not used" in notes
    assert f"note: resuming from the previous checkpoint {out / 'checkpoint.prev.pt'} (step 1)" in notes
    for a, b in zip(straight.senior.parameters(), resumed.senior.parameters()):
        assert torch.equal(a, b)
    assert _rows(tmp_path / "straight") == _rows(out)


def test_no_checkpoint_that_verifies_is_an_error(tiny_dir, tmp_path):
    out = tmp_path / "run"
    GRPOTrainer(_cfg(tiny_dir, out, steps=2, save_every=1), reward_fn=_text_reward, progress=False).train()
    for name in ("checkpoint.pt", "checkpoint.prev.pt"):
        data = bytearray((out / name).read_bytes())
        data[len(data) // 2] ^= 0xFF
        (out / name).write_bytes(bytes(data))
    with pytest.raises(TandemError, match="no checkpoint in .* matches its recorded sha256"):
        GRPOTrainer(_cfg(tiny_dir, out, steps=3), progress=False).train(resume=True)


def test_the_checkpoints_config_is_compared_when_config_json_is_gone(tiny_dir, tmp_path):
    out = tmp_path / "run"
    GRPOTrainer(_cfg(tiny_dir, out, steps=2), reward_fn=_text_reward, progress=False).train()
    (out / "config.json").unlink()
    with pytest.raises(TandemError, match=r"^--resume with a different config than the checkpoint's config .*\(lr\)"):
        GRPOTrainer(_cfg(tiny_dir, out, steps=3, lr=1e-2), progress=False).train(resume=True)


def test_settings_that_do_not_change_the_result_are_accepted_with_a_note(tiny_dir, tmp_path, capsys, monkeypatch):
    straight = GRPOTrainer(_cfg(tiny_dir, tmp_path / "straight"), reward_fn=_text_reward, progress=False)
    straight.train()
    out = tmp_path / "run"
    crashed = GRPOTrainer(_cfg(tiny_dir, out), reward_fn=_crashing_reward(3 * 8), progress=False)
    with pytest.raises(_Crash):
        crashed.train()
    monkeypatch.chdir(tiny_dir.parent)
    spelled = f"./{tiny_dir.name}"  # the same folder, another spelling
    resumed = GRPOTrainer(_cfg(tiny_dir, out, model=spelled, threads=1, val_every=1), reward_fn=_text_reward,
                          progress=False)
    capsys.readouterr()
    resumed.train(resume=True)
    notes = _notes(capsys)
    assert "note: resuming with threads=1 (the run had 0): it does not change the result" in notes
    assert "note: resuming with val_every=1 (the run had 0): it does not change the result" in notes
    assert f"note: resuming with model={spelled}, spelled {tiny_dir} in the run: the same folder" in notes
    for a, b in zip(straight.senior.parameters(), resumed.senior.parameters()):
        assert torch.equal(a, b)


def test_steps_below_the_checkpoints_step_are_refused(tiny_dir, tmp_path):
    out = tmp_path / "run"
    GRPOTrainer(_cfg(tiny_dir, out), reward_fn=_text_reward, progress=False).train()
    before = (out / "summary.json").read_text()
    with pytest.raises(TandemError, match=f"^steps=2 is below the checkpoint's step {STEPS} in {out}; resume with "
                                          f"steps >= {STEPS} or start a new --out$"):
        GRPOTrainer(_cfg(tiny_dir, out, steps=2), progress=False).train(resume=True)
    assert (out / "summary.json").read_text() == before


def test_resume_without_a_checkpoint_says_so_and_writes_no_duplicate_rows(tiny_dir, tmp_path, capsys):
    straight = GRPOTrainer(_cfg(tiny_dir, tmp_path / "straight"), reward_fn=_text_reward, progress=False)
    straight.train()
    out = tmp_path / "run"
    crashed = GRPOTrainer(_cfg(tiny_dir, out), reward_fn=_crashing_reward(4), progress=False)
    with pytest.raises(_Crash):
        crashed.train()  # dies in step 1, before the first save
    assert [r["step"] for r in _rows(out)] == [0]
    capsys.readouterr()
    GRPOTrainer(_cfg(tiny_dir, out), reward_fn=_text_reward, progress=False).train(resume=True)
    assert f"note: --resume: no checkpoint in {out} (the run stopped before its first save, or it was deleted); " \
           "starting from step 0 and rewriting the run's files" in _notes(capsys)
    assert _rows(out) == _rows(tmp_path / "straight")


def test_resume_of_a_finished_run_says_it_is_finished(tiny_dir, tmp_path, capsys):
    out = tmp_path / "run"
    first = GRPOTrainer(_cfg(tiny_dir, out), reward_fn=_text_reward, progress=False).train()
    rows = (out / "metrics.jsonl").read_text()
    capsys.readouterr()
    again = GRPOTrainer(_cfg(tiny_dir, out), reward_fn=_text_reward, progress=False).train(resume=True)
    assert _notes(capsys) == [f"note: {out} is a finished run ({STEPS} of {STEPS} steps, {out / 'summary.json'}); "
                              "nothing to do: raise steps= to train further"]
    assert again == first and (out / "metrics.jsonl").read_text() == rows


def test_a_torn_last_metrics_line_is_dropped_with_a_note(tiny_dir, tmp_path, capsys):
    straight = GRPOTrainer(_cfg(tiny_dir, tmp_path / "straight"), reward_fn=_text_reward, progress=False)
    straight.train()
    out = tmp_path / "run"
    crashed = GRPOTrainer(_cfg(tiny_dir, out), reward_fn=_crashing_reward(3 * 8), progress=False)
    with pytest.raises(_Crash):
        crashed.train()
    with (out / "metrics.jsonl").open("a") as f:
        f.write('{"step": 4, "reward_me')  # the crash cut this write short
    capsys.readouterr()
    GRPOTrainer(_cfg(tiny_dir, out), reward_fn=_text_reward, progress=False).train(resume=True)
    assert f"note: {out / 'metrics.jsonl'}:5: dropped a torn last line (a write cut short by the crash)" \
        in _notes(capsys)
    assert _rows(out) == _rows(tmp_path / "straight")


def test_a_verl_form_run_with_tensorboard_resumes_and_reads_as_the_flat_form(tiny_dir, tmp_path):
    pytest.importorskip("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from tandem.io.metric_log import read_metrics

    straight = GRPOTrainer(_cfg(tiny_dir, tmp_path / "straight"), reward_fn=_text_reward, progress=False).train()
    out = tmp_path / "run"
    logged = dict(metrics_format="verl", tensorboard=True)
    crashed = GRPOTrainer(_cfg(tiny_dir, out, **logged), reward_fn=_crashing_reward(3 * 8), progress=False)
    with pytest.raises(_Crash):
        crashed.train()  # dies during step 4, after the checkpoint of step 2 and the row of step 3
    with (out / "metrics.jsonl").open("a") as f:
        f.write('{"step": 4, "data": {"rew')  # a torn tail in verl's form
    resumed = GRPOTrainer(_cfg(tiny_dir, out, **logged), reward_fn=_text_reward, progress=False).train(resume=True)
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert all(set(r) == {"step", "data"} for r in rows) and [r["step"] for r in rows] == list(range(STEPS + 1))

    def numbers(path):
        return [(s, {k: v for k, v in m.items() if not k.startswith("time_")}) for s, m in read_metrics(path)]

    assert numbers(out / "metrics.jsonl") == numbers(tmp_path / "straight" / "metrics.jsonl")
    assert {k: v for k, v in resumed.items() if "seconds" not in k} == \
        {k: v for k, v in straight.items() if "seconds" not in k} | {"model": str(out / "model")}
    events = EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    assert [e.step for e in events.Scalars("reward_mean")] == list(range(1, STEPS + 1))  # step 3 once: purged


def test_sft_resumes_exactly_and_a_finished_sft_says_so(tiny_dir, tmp_path, capsys, monkeypatch):
    from tandem.models.loading import load_model
    from tandem_app.train import sft

    def cfg(out):
        return sft.SFTConfig(model=str(tiny_dir), out=str(out), steps=4, batch_size=4, warmup_steps=1,
                             n_train_problems=40, n_val_problems=2, max_new_tokens=8, log_every=1, save_every=2)

    sft.run_sft(cfg(tmp_path / "straight"), progress=False)
    real, calls = sft.sft_loss, {"n": 0}

    def crash_in_step_4(*a):
        calls["n"] += 1
        if calls["n"] == 4:
            raise _Crash("simulated crash")
        return real(*a)

    monkeypatch.setattr(sft, "sft_loss", crash_in_step_4)
    with pytest.raises(_Crash):
        sft.run_sft(cfg(tmp_path / "run"), progress=False)
    monkeypatch.setattr(sft, "sft_loss", real)
    sft.run_sft(cfg(tmp_path / "run"), resume=True, progress=False)

    def clean(out):
        return [{k: v for k, v in r.items() if k != "elapsed_s"} for r in _rows(out)]

    assert clean(tmp_path / "run") == clean(tmp_path / "straight")
    for a, b in zip(load_model(tmp_path / "straight" / "model").parameters(),
                    load_model(tmp_path / "run" / "model").parameters()):
        assert torch.equal(a, b)
    capsys.readouterr()
    sft.run_sft(cfg(tmp_path / "run"), resume=True, progress=False)
    assert any("is a finished run (4 of 4 steps" in n for n in _notes(capsys))


def test_a_run_that_trains_again_drops_its_old_summary(tiny_dir, tmp_path):
    out = tmp_path / "run"
    GRPOTrainer(_cfg(tiny_dir, out, steps=2), reward_fn=_text_reward, progress=False).train()
    assert json.loads((out / "summary.json").read_text())["steps"] == 2
    with pytest.raises(_Crash):  # extended to 3 steps, killed in step 3
        GRPOTrainer(_cfg(tiny_dir, out, steps=3), reward_fn=_crashing_reward(0), progress=False).train(resume=True)
    assert not (out / "summary.json").exists()  # no summary of 2 steps beside a run of 3
