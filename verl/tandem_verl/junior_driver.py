"""The junior that follows the senior on verl: `tandem.junior_update` driven from the trainer.

The junior lives only in the rollout engines (no copy on the actor). `TandemPPOTrainer`
calls this class, a `tandem.process.junior_update.JuniorUpdater`, at three points of verl's sync
loop (trainer_base.py `fit`: step s generates, trains, saves its checkpoint, then
`on_step_end` syncs the senior):

- `update(s)` after each `on_step_end` sync: every worker of every replica applies the
  rule for trainer step s to its shard (`vllm_source/engine_junior.py`); the replicas
  must agree on the junior's checksum;
- `save(folder)` before verl writes checkpoint s: replica 0's workers write the junior the
  step's rollouts used (updates through s - 1) to `global_step_s/junior/`, so a
  checkpoint verl calls whole (`data.pt` last) always holds it; `state()` names that folder
  and the trainer step it holds;
- `restore(checkpoint_state(folder, s))` after `on_init_end`'s sync: every replica loads that
  junior; the trainer then applies step s's update, which the killed run had applied (or
  not) after its save. A checkpoint of an earlier version is read under its old folder
  name (`tandem.io.legacy`).

Steps in the rule are the senior's optimizer steps, as on every trainer: trainer step s ends
with optimizer step s x m (m = mini-batches x epochs, `refusals.optimizer_steps_per_step`),
and the workers apply the rule for that step. The wiring refuses the rules a sync every m
optimizer steps cannot honour exactly (`tandem.process.junior_update.steps_per_sync_error`), so a
junior's state saved "through step k" counts optimizer steps (model_spec/SPEC.md §12).
"""

from __future__ import annotations

from pathlib import Path

import ray

from tandem.io import legacy
from tandem.errors import TandemError
from tandem.process.junior_update import CHECKPOINT_NAME, JuniorUpdate
from tandem.io.metric_log import JUNIOR_PREFIX, batch_metrics



class JuniorUpdater:
    """Drives the rollout engines' `JuniorUpdater`s (`vllm_source.engine_junior`); see the module docstring."""

    def __init__(self, rule: JuniorUpdate, replicas: list, optimizer_steps: int = 1) -> None:
        self.rule, self.optimizer_steps = rule, optimizer_steps  # optimizer steps per trainer step
        self.servers = [r.servers[0] for r in replicas]  # node 0 of each replica holds its engine
        self.metrics: dict[str, float] = {}
        self.through = 0  # the last trainer step whose update the engines' juniors hold
        self.saved: dict | None = None  # `state()`: the last save's folder and the trainer step it holds

    def _call(self, servers, method: str, *args) -> list[list]:
        return ray.get([s.tandem_junior.remote(method, *args) for s in servers])

    def update(self, step: int, prefix: str = JUNIOR_PREFIX) -> None:
        """After trainer step `step`'s sync: the rule for its last optimizer step, on every worker."""
        per_replica = self._call(self.servers, "tandem_junior_update", step * self.optimizer_steps)
        sums = [sum(w["checksum"] for w in workers) for workers in per_replica]
        if len(set(sums)) != 1:
            raise TandemError(f"after step {step} the rollout replicas' juniors differ (checksums {sums}); "
                              "the junior update must reach every replica alike")
        self.through = step
        workers = per_replica[0]
        self.metrics.update(batch_metrics({
            "updated": max(w["changed"] for w in workers),
            "checksum": sums[0],
            "senior_max_abs_diff_before": max(w["max_abs_diff_before"] for w in workers),
            "senior_max_abs_diff": max(w["max_abs_diff_after"] for w in workers),
        }, prefix))

    def save(self, step_folder: Path) -> None:
        """Have replica 0's workers write their juniors into `step_folder/junior/` (one file per rank)."""
        directory = step_folder / CHECKPOINT_NAME
        self._call(self.servers[:1], "tandem_junior_save", str(directory))
        self.saved = {"folder": str(directory), "through": self.through}

    def state(self) -> dict:
        """Where the last save's junior is and the trainer step whose update it holds: the weights are the workers'."""
        if self.saved is None:
            raise TandemError("no junior saved yet: verl's trainer holds no junior weights, its workers write them "
                              "at each checkpoint (save)")
        return dict(self.saved)

    def restore(self, state: dict) -> None:
        """Load the junior `state` names into every replica's workers; they must hold trainer step `through`'s."""
        directory, through = Path(state["folder"]), int(state["through"])
        if not directory.is_dir():
            raise TandemError(f"{directory} is missing: checkpoint {directory.parent.name} holds no junior (saved "
                              f"with junior_update=frozen?), but this run sets tandem.junior_update={self.rule.text}; "
                              "resume with the run's own setting or start a new run")
        restored = self._call(self.servers, "tandem_junior_restore", str(directory))
        held = {int(w["through"]) for workers in restored for w in workers}
        expected = through * self.optimizer_steps
        if held != {expected}:
            raise TandemError(f"{directory} holds the junior after optimizer step {sorted(held)}, expected {expected} "
                              f"(trainer step {through} x {self.optimizer_steps}); resume with the run's own batch "
                              "sizes")
        self.through = through

    def pop_metrics(self) -> dict[str, float]:
        metrics, self.metrics = self.metrics, {}
        return metrics


def checkpoint_state(step_folder: Path, step: int) -> dict:
    """The `state()` checkpoint `step` (its folder `step_folder`) was saved with: its junior, through step - 1."""
    return {"folder": str(saved_junior(step_folder)), "through": step - 1}


def saved_junior(step_folder: Path) -> Path:
    """The folder of a verl step folder's junior: `junior/`, or the name an earlier version gave it."""
    return legacy.junior_checkpoint(step_folder, CHECKPOINT_NAME)
