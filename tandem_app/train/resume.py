"""Starting a run in its folder, or resuming it: what is refused, what is accepted with a note.

A new run needs an empty folder. `--resume` compares this run's config with the one in
`config.json` and with the one saved inside the checkpoint, whichever of the two is
there, so a deleted `config.json` cannot let another learning rate in silently. Settings
that do not change the result (`NEUTRAL`: threads, validation and save cadence, the
logging keys; a path spelled differently that names the same folder) are accepted with a
note (none for a logging key an older run's config lacks); any other difference is
refused. `steps` may grow, never fall below the checkpoint's step. Resuming with no
checkpoint says so and starts over from step 0; resuming a finished run says it is
finished and does nothing. A checkpoint no checksum record vouches for is refused unless
`trust_unverified` (`tandem_app.train.checkpoint`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tandem.io.config_files import config_diff
from tandem.errors import TandemError
from tandem.io.jsonl import write_json
from tandem.io.run_lock import check_new_run_folder, note
from tandem_app.train.checkpoint import read_checkpoint

CONFIG_NAME = "config.json"
SUMMARY_NAME = "summary.json"
# Keys that change what is logged or saved, or how fast, never the weights or the logged numbers.
NEUTRAL = ("threads", "val_every", "save_every", "log_every", "wandb", "wandb_project", "wandb_mode",
           "metrics_format", "tensorboard", "tensorboard_dir", "keep_checkpoints")
PATH_KEYS = ("model", "tandem.junior_model")  # compared as the folders they name
IGNORED = ("out", "steps")  # out: this very folder; steps: checked against the checkpoint


@dataclass
class Start:
    """Where a run starts: step 0 (state None) or a verified checkpoint; `finished` holds a done run's summary."""

    step: int = 0
    state: dict | None = None
    finished: dict | None = None


def _get(tree: dict, dotted: str):
    for part in dotted.split("."):
        tree = tree.get(part) if isinstance(tree, dict) else None
    return tree


def _has(tree: dict, dotted: str) -> bool:
    *parents, last = dotted.split(".")
    for part in parents:
        tree = tree.get(part) if isinstance(tree, dict) else None
    return isinstance(tree, dict) and last in tree


def _same_folder(a, b) -> bool:
    return isinstance(a, str) and isinstance(b, str) and bool(a) and Path(a).resolve() == Path(b).resolve()


def compare_config(saved: dict, config: dict, source: str) -> None:
    """Refuse a result-changing difference from `saved`; note the others."""
    refused = []
    for key in config_diff(saved, config):
        was, now = _get(saved, key), _get(config, key)
        if key in IGNORED:
            continue
        if key in NEUTRAL:
            if _has(saved, key):  # silent for a key an older run's config lacks
                note(f"resuming with {key}={now} (the run had {was}): it does not change the result")
        elif key in PATH_KEYS and _same_folder(was, now):
            note(f"resuming with {key}={now}, spelled {was} in the run: the same folder")
        else:
            refused.append(key)
    if refused:
        raise TandemError(f"--resume with a different config than {source} ({', '.join(refused)}); "
                          "use the run's config or a new --out")


def _read_json(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def start_run(out: Path, config: dict, resume: bool, trust_unverified: bool = False) -> Start:
    """Check the (locked) folder `out` against `config`; write `config.json`; return where the run starts."""
    if not resume:
        check_new_run_folder(out)
        write_json(out / CONFIG_NAME, config)
        return Start()
    saved = _read_json(out / CONFIG_NAME)
    if saved is not None:
        compare_config(saved, config, str(out / CONFIG_NAME))
    state = read_checkpoint(out, trust_unverified=trust_unverified)
    if state is None:
        note(f"--resume: no checkpoint in {out} (the run stopped before its first save, or it was deleted); "
             "starting from step 0 and rewriting the run's files")
        (out / SUMMARY_NAME).unlink(missing_ok=True)
        write_json(out / CONFIG_NAME, config)
        return Start()
    inside = state.get("extra", {}).get("config")
    if inside is not None:
        compare_config(inside, config, f"the checkpoint's config ({out / 'checkpoint.pt'})")
    step, steps = int(state["step"]), config["steps"]
    if steps < step:
        raise TandemError(f"steps={steps} is below the checkpoint's step {step} in {out}; resume with steps >= {step} "
                          "or start a new --out")
    summary = _read_json(out / SUMMARY_NAME)
    if steps == step and summary is not None and summary.get("steps") == step:
        note(f"{out} is a finished run ({step} of {steps} steps, {out / SUMMARY_NAME}); nothing to do: "
             "raise steps= to train further")
        return Start(step, state, finished=summary)
    (out / SUMMARY_NAME).unlink(missing_ok=True)  # the run trains again: its old summary no longer holds
    was = (inside or saved or {}).get("steps", steps)
    if steps != was:
        note(f"resuming at step {step} with steps={steps} (the run had steps={was})")
    write_json(out / CONFIG_NAME, config)
    return Start(step, state)
