"""Crash-safe checkpoints in the tandem trainer: a kill at any point of a save leaves a resumable tracker.

verl's real `_save_checkpoint` / `_load_checkpoint` and its real retention
(`BaseCheckpointManager.register_checkpoint`) and `find_latest_ckpt_path` run here; only the
worker group, dataloader and callback are stand-ins (files on disk, no Ray, no model). A kill
is an exception raised from inside the save, after the new actor files are written and
verl's retention has run, before `data.pt` and the tracker. The launcher-level SIGKILL test
is tests/test_scale_verl_smoke.py (scale lane, the `tandem` run killed mid-step 3).
"""

from __future__ import annotations

from pathlib import Path

import pytest

for mod in ("cachetools", "transfer_queue", "uvicorn"):
    pytest.importorskip(mod, reason=f"verl's verl-core extras are not installed ({mod})")

from omegaconf import OmegaConf  # noqa: E402
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync  # noqa: E402
from verl.utils.checkpoint.checkpoint_manager import BaseCheckpointManager, find_latest_ckpt_path  # noqa: E402

from tandem_verl import checkpoint_tracker  # noqa: E402
from tandem_verl.trainer import TandemPPOTrainer  # noqa: E402

ACTOR_FILES = ("model_world_size_1_rank_0.pt", "optim_world_size_1_rank_0.pt", "extra_state_world_size_1_rank_0.pt")


class Killed(Exception):
    """Stands for SIGKILL arriving at that point of the save."""


class FakeActorGroup:
    """The actor worker group's checkpoint calls: files on disk, verl's own retention."""

    def __init__(self):
        self.manager = object.__new__(BaseCheckpointManager)
        self.manager.previous_saved_paths = []
        self.loaded: list[str] = []

    def save_checkpoint(self, local_path, hdfs_path, global_step, max_ckpt_to_keep=None):
        self.manager.ensure_checkpoint_capacity(max_ckpt_to_keep)
        Path(local_path).mkdir(parents=True, exist_ok=True)
        for name in ACTOR_FILES:
            (Path(local_path) / name).write_text(str(global_step))
        self.manager.register_checkpoint(local_path, max_ckpt_to_keep)

    def load_checkpoint(self, local_path, del_local_after_load=False):
        for name in ACTOR_FILES:
            (Path(local_path) / name).read_text()  # FileNotFoundError on a gutted checkpoint
        self.loaded.append(local_path)


class FakeLoader:
    def __init__(self):
        self.kill_at: int | None = None
        self.step = 0
        self.restored = None

    def state_dict(self):
        if self.step == self.kill_at:
            raise Killed
        return {"step": self.step}

    def load_state_dict(self, state):
        self.restored = state


class Callback:
    def on_save(self, **kwargs):
        pass


def make(cls, root: Path, keep: int = 1):
    trainer = object.__new__(cls)
    trainer.config = OmegaConf.create({
        "trainer": {"default_local_dir": str(root), "default_hdfs_dir": None, "max_actor_ckpt_to_keep": keep,
                    "max_critic_ckpt_to_keep": keep, "resume_mode": "auto", "del_local_ckpt_after_load": False},
        "actor_rollout_ref": {"actor": {"checkpoint": {"async_save": False}}},
    })
    trainer.actor_rollout_wg, trainer.train_dataloader = FakeActorGroup(), FakeLoader()
    trainer.checkpoint_callback, trainer.use_critic, trainer.trainer_mode = Callback(), False, "sync"
    return trainer


def save(trainer, step: int, kill: bool = False):
    trainer.global_steps = trainer.train_dataloader.step = step
    trainer.train_dataloader.kill_at = step if kill else None
    if kill:
        with pytest.raises(Killed):
            trainer._save_checkpoint()
    else:
        trainer._save_checkpoint()


def whole(path: str | None) -> bool:
    return path is not None and (Path(path) / "data.pt").is_file() and all(
        (Path(path) / "actor" / n).is_file() for n in ACTOR_FILES)


def test_verls_own_save_leaves_the_tracker_on_a_gutted_checkpoint_when_killed_mid_save(tmp_path):
    """Why the fix exists (pinned to verl 0.9.1): retention runs before the tracker moves."""
    trainer = make(PPOTrainerSync, tmp_path)
    save(trainer, 1)
    save(trainer, 2, kill=True)
    latest = find_latest_ckpt_path(str(tmp_path))
    assert latest.endswith("global_step_1") and not whole(latest)


def test_a_kill_mid_save_leaves_the_tracker_on_the_last_whole_checkpoint_and_resume_loads_it(tmp_path):
    trainer = make(TandemPPOTrainer, tmp_path)
    save(trainer, 1)
    save(trainer, 2, kill=True)
    latest = find_latest_ckpt_path(str(tmp_path))
    assert latest.endswith("global_step_1") and whole(latest)
    resumed = make(TandemPPOTrainer, tmp_path)
    resumed._load_checkpoint()
    assert resumed.global_steps == 1 and resumed.actor_rollout_wg.loaded == [str(tmp_path / "global_step_1" / "actor")]
    assert resumed.train_dataloader.restored == {"step": 1}


@pytest.mark.parametrize("keep", [1, 2])
def test_retention_still_holds_and_only_after_the_tracker_moved(tmp_path, keep):
    trainer = make(TandemPPOTrainer, tmp_path, keep=keep)
    for step in (1, 2, 3):
        save(trainer, step)
        assert (tmp_path / checkpoint_tracker.TRACKER).read_text() == str(step)
        assert whole(find_latest_ckpt_path(str(tmp_path)))
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("global_step_")) == [
        f"global_step_{s}" for s in (1, 2, 3)[-keep:]]
    assert not list(tmp_path.glob(".deleting-*")) and not list(tmp_path.glob(f".{checkpoint_tracker.TRACKER}.tmp"))
    assert trainer.config.trainer.max_actor_ckpt_to_keep == keep  # the config is given back


def test_a_relaunch_keeps_the_checkpoints_of_earlier_processes_as_verl_does(tmp_path):
    first = make(TandemPPOTrainer, tmp_path)
    save(first, 2)
    second = make(TandemPPOTrainer, tmp_path)
    save(second, 3)
    assert checkpoint_tracker.complete_steps(tmp_path) == [2, 3]


@pytest.mark.parametrize("torn", ["", "1", "  "])
def test_a_tracker_torn_by_a_kill_is_pointed_back_at_the_newest_whole_checkpoint(tmp_path, torn):
    trainer = make(TandemPPOTrainer, tmp_path, keep=2)
    save(trainer, 1)
    save(trainer, 2)
    (tmp_path / "global_step_3" / "actor").mkdir(parents=True)  # a save killed before data.pt
    (tmp_path / checkpoint_tracker.TRACKER).write_text(torn)
    resumed = make(TandemPPOTrainer, tmp_path)
    resumed._load_checkpoint()
    assert resumed.global_steps == (1 if torn == "1" else 2)  # a readable tracker is obeyed as it is


def test_a_torn_tracker_without_any_whole_checkpoint_trains_from_scratch(tmp_path):
    (tmp_path / checkpoint_tracker.TRACKER).write_text("")
    resumed = make(TandemPPOTrainer, tmp_path)
    resumed._load_checkpoint()
    assert resumed.global_steps == 0 and not (tmp_path / checkpoint_tracker.TRACKER).exists()


def test_verl_cannot_resume_from_a_torn_tracker_on_its_own(tmp_path):
    (tmp_path / checkpoint_tracker.TRACKER).write_text("")
    with pytest.raises(ValueError):
        find_latest_ckpt_path(str(tmp_path))
