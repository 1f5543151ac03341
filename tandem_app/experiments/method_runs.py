"""Train the demo's methods (TRL, GRPO) side by side, one process each, when each has a free core.

The two runs share nothing but the base they start from, and on the tiny models each uses one
torch thread (`tandem/models/threads.py`), so on a 2-core machine one at a time leaves a core idle.
Each child is the same `GRPOTrainer` run as in one process (same config, seed and files), so
the results are the runs' own; only the console differs: the children are silent and the
parent draws one bar over both runs' logged steps. One failed run stops the demo with its own
error once the other has stopped; a finished run is kept and a later launch resumes the other.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from pathlib import Path

from tandem.models.threads import choose_threads
from tandem_app.train.train_config import TrainConfig

POLL_SECONDS = 0.5
LOAD_MARGIN = 0.3  # the load average lags: this much of a core's use by others still counts as free


def cores() -> int:
    """CPU cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def free_cores() -> float:
    """Cores not in use by other work: the machine's cores less its 1-minute load, which counts
    this process too (it has just run the SFT), so an idle 2-core machine shows about one free."""
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 1.0
    return cores() - load


def can_run_side_by_side(configs: list[TrainConfig]) -> bool:
    """True when each run's torch uses one thread and a core is free for every run beside this one.

    On a busy machine the runs would only split this process's share of the CPU and each pay
    its own start-up, so one after the other is faster there (model_spec/PERFORMANCE.md)."""
    one_thread = all(_threads(tc) == 1 for tc in configs)
    spare = len(configs) - 1 - LOAD_MARGIN
    return len(configs) > 1 and one_thread and cores() >= len(configs) and free_cores() >= spare


def train_side_by_side(configs: list[TrainConfig], progress: bool) -> None:
    """Train every config at once, one spawned process each."""
    # spawn, not fork: the parent has torch's thread pools and maybe tqdm's lock already running.
    pool = ProcessPoolExecutor(len(configs), mp_context=multiprocessing.get_context("spawn"),
                               initializer=follow_parent, initargs=(os.getpid(),))
    with pool:
        futures = [pool.submit(train_one, tc) for tc in configs]
        _watch(configs, futures, progress)
        for f in futures:
            f.result()  # re-raises a child's error here


def follow_parent(parent: int) -> None:
    """In each child: end when the demo that started it is gone (killed, not interrupted), so no run
    trains on unseen, holding its folder's lock; its last checkpoint stays and a rerun resumes it."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(POLL_SECONDS)
        os._exit(1)  # no cleanup to run: checkpoints are written atomically, a dead PID's lock is taken over

    threading.Thread(target=watch, name="follow-parent", daemon=True).start()


def train_one(tc: TrainConfig) -> None:
    """One method's run, silent (the parent draws the bar)."""
    from tandem_app.train.grpo_trainer import GRPOTrainer

    GRPOTrainer(tc, progress=False).train(resume=Path(tc.out).exists())


def _watch(configs: list[TrainConfig], futures: list, progress: bool) -> None:
    """Wait for the runs, drawing one bar over the steps both have logged."""
    from tqdm import tqdm

    total = sum(tc.steps for tc in configs)
    label = " + ".join(tc.method for tc in configs)
    with tqdm(total=total, desc=label, unit="step", disable=not progress) as bar:
        while True:
            done, _ = wait(futures, timeout=POLL_SECONDS, return_when=FIRST_EXCEPTION)
            new = sum(_logged_steps(tc) for tc in configs) - bar.n
            if new > 0:  # no redraw without news: a log file or CI console keeps one line per step
                bar.update(new)
            if len(done) == len(futures) or any(f.exception() for f in done):
                return


def _logged_steps(tc: TrainConfig) -> int:
    """Steps the run has logged so far (its metrics.jsonl holds one row per step, and step 0's)."""
    from tandem_app.train.metrics import METRICS_NAME

    try:
        with open(Path(tc.out) / METRICS_NAME, "rb") as f:
            rows = sum(1 for _ in f)
    except OSError:
        return 0
    return max(0, min(tc.steps, rows - 1))


def _threads(tc: TrainConfig) -> int | None:
    junior = [tc.tandem.junior_model] if tc.tandem.junior_model else []
    if not tc.threads and os.environ.get("OMP_NUM_THREADS") == "1":
        return 1
    return choose_threads(tc.threads, [tc.model, *junior])
