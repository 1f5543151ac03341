"""`JuniorUpdater`: the rule inside an engine worker, its schedule, its checkpoint, its guard (no vLLM needed).

The engine side of a junior that follows the senior on verl (`vllm_source/engine_junior.py`),
on two small torch modules standing in for one worker's shards of the senior and the junior.
"""

from __future__ import annotations

import pytest
import torch

from tandem.errors import TandemError
from tandem.process.junior_update import JuniorUpdater as JuniorUpdaterProtocol
from tandem.process.junior_update import parse_junior_update
from vllm_source.engine_junior import JuniorUpdater, load_state, save_state
from vllm_source.junior_guard import JuniorGuard


def shard(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Linear(6, 3))


def pair(rule: str, self_paired: bool = True):
    senior, junior = shard(0), shard(1)
    guard = JuniorGuard(lambda: list(junior.parameters()), keep_host_copy=False)
    guard.on_step()  # the engine's first step takes the fingerprint
    follower = JuniorUpdater(parse_junior_update(rule), junior, senior, guard, self_paired=self_paired)
    return senior, junior, guard, follower


def flat(module: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in module.parameters()])


def test_sync_copies_on_its_schedule_and_ema_blends_every_step():
    senior, junior, _, follower = pair("sync:2")
    assert isinstance(follower, JuniorUpdaterProtocol)  # update(step), state(), restore(state)
    base = flat(junior)
    assert follower.update(1)["changed"] == 0.0 and torch.equal(flat(junior), base)
    out = follower.update(2)
    assert out["changed"] == 1.0 and out["max_abs_diff_after"] == 0.0 and torch.equal(flat(junior), flat(senior))

    senior, junior, _, follower = pair("ema:0.75")
    want = 0.75 * flat(junior) + 0.25 * flat(senior)
    out = follower.update(1)
    assert torch.allclose(flat(junior), want, atol=1e-7)
    assert out["max_abs_diff_after"] == pytest.approx(0.75 * out["max_abs_diff_before"], rel=1e-5)


def test_each_steps_update_is_applied_once_and_in_order():
    *_, follower = pair("ema:0.5")
    follower.update(3)
    for step in (3, 2):
        with pytest.raises(TandemError, match=f"step {step}'s update asked after step 3's"):
            follower.update(step)


def test_a_scheduled_change_passes_the_guard_and_an_unscheduled_one_does_not():
    senior, junior, guard, follower = pair("sync:1")
    follower.update(1)
    guard.on_step()
    guard.on_sync()  # the junior changed on its schedule: the guard took the new fingerprint
    with torch.no_grad():
        next(junior.parameters()).add_(1.0)
    guard.on_step()
    with pytest.raises(TandemError, match="junior's weights changed during a weight sync"):
        guard.on_sync()


def test_a_checkpointed_junior_comes_back_bit_exact_with_its_place_in_the_schedule(tmp_path):
    senior, junior, _, follower = pair("ema:0.5")
    follower.update(1)
    checksum = follower.update(2)["checksum"]
    saved_bits = flat(junior).clone()
    save_state(tmp_path, 1, 2, follower.state())
    other_senior, other_junior, other_guard, resumed = pair("ema:0.5")
    other_senior.load_state_dict(senior.state_dict())
    out = resumed.restore(load_state(tmp_path, 1, 2))
    assert out == {"through": 2.0, "checksum": checksum} and torch.equal(flat(other_junior), saved_bits)
    with pytest.raises(TandemError, match="step 2's update asked after step 2's"):
        resumed.update(2)


def test_what_a_checkpoint_cannot_be_resumed_with_is_one_line(tmp_path):
    *_, follower = pair("sync:2")
    save_state(tmp_path, 0, 1, follower.state())
    with pytest.raises(TandemError, match="saved at rollout tensor-parallel size 1, this run has 2"):
        load_state(tmp_path, 0, 2)
    with pytest.raises(TandemError, match="rank_1.pt is missing: the checkpoint holds no junior for rollout rank 1"):
        load_state(tmp_path, 1, 1)
    *_, ema = pair("ema:0.9")
    with pytest.raises(TandemError, match="followed junior_update=sync:2, this run sets ema:0.9"):
        ema.restore(load_state(tmp_path, 0, 1))


@pytest.mark.parametrize(("rule", "self_paired", "message"), [
    ("frozen", True, "junior is frozen .* set tandem.junior_update to sync:K or ema:BETA"),
    ("sync:1", False, "needs the senior and its own base as the junior in one worker"),
])
def test_a_frozen_or_foreign_junior_refuses_to_follow(rule, self_paired, message):
    *_, follower = pair(rule, self_paired)
    with pytest.raises(TandemError, match=message):
        follower.update(1)
