"""The released code's names and spellings, translated in one place.

The paper's release (CSSLab/Tandem-RLVR) and this project's earlier versions spell some
settings, metrics and checkpoint files differently. Every way a config arrives (YAML and
`key=value`, verl's `tandem:` block, `$VLLM_TANDEM_CONFIG`, the CLI's `--method`), every
reader of a metrics log and every resume reads them through this file, and no other file
spells them; `model_spec/TERMINOLOGY.md` lists them beside the paper's names.
"""

from __future__ import annotations

from pathlib import Path

from tandem.errors import TandemError

# Legacy key of the tandem process -> ours (`TandemConfig.ALIASES`).
PROCESS_KEYS = {
    "prob_primary": "prob_senior",
    "frozen_model": "junior_model",
    "first_model": "first_author",
    "boundary_token_ids_path": "boundary_token_ids",  # the release's VLLM_TANDEM_CONFIG names the file so
}
# Legacy key of the loss settings -> ours (`tandem.loss.loss_config.TandemLossConfig.ALIASES`).
LOSS_KEYS = {"tandem_jr_tkn_weight": "junior_token_loss_weight"}
# Loss keys that the release's configs and our earlier ones put beside the process's keys.
LOSS_KEYS_BESIDE_PROCESS = ("junior_token_loss_weight", *LOSS_KEYS, "loss_denominator")
# The release's key for a junior on GPUs of its own: our `placement=split` (`placement`).
PLACEMENT_KEY = "frozen_gpu_devices"
# Legacy author names -> the paper's (`first_author`).
AUTHOR_NAMES = {"primary": "senior", "hot": "senior", "frozen": "junior"}
# Method names -> ours: `trl` is the paper's abbreviation of tandem training.
METHOD_NAMES = {"trl": "tandem"}
# Keys a `tandem:` block refuses, each with what to set instead (`TandemConfig.RETIRED`).
PROCESS_RETIRED = {
    "junior_token_loss_weight": "is a loss setting, not the tandem process's: set loss.junior_token_loss_weight "
    "(tandem-rlvr train) or tandem.junior_token_loss_weight (verl's tandem: block)",
    "tandem_jr_tkn_weight": "(legacy) is a loss setting: set loss.junior_token_loss_weight",
    "loss_denominator": "is a loss setting: set loss.loss_denominator (verl: tandem.loss_denominator)",
    "primary_model": "(legacy) names the senior, which is the engine's own model here; remove it",
    "enabled": "(legacy) is the switch of verl's tandem: block (tandem.enable), not a process key",
    "extra": "is not a key: backend keys are declared TandemConfig fields (e.g. senior_architecture)",
}
# The embedded trainer's keys that live in another section now -> their place (`TrainConfig.MOVED`).
# The coins' and the sampling's seed is the run's (model_spec/SPEC.md §4: one seed rule).
TRAIN_MOVED = {
    "tandem.junior_token_loss_weight": "loss.junior_token_loss_weight",
    "tandem.tandem_jr_tkn_weight": "loss.junior_token_loss_weight",
    "tandem.seed": "seed",
    "temperature": "sampling.temperature",
    "max_new_tokens": "sampling.max_new_tokens",
}
# Metric names older logs hold -> the shared names (`tandem.io.metric_log.read_metrics`): the
# release's verl metric, and the HF TRL example's metrics.jsonl of earlier versions.
# The output field that keeps the release's spelling of `senior_token_fraction` (one response's,
# or a run's last step's): summary.json, eval sample rows, `rollout` rows, TRL's reward keyword.
# Users read it, so it stays; the code writes it from here and names the number by its present name.
SENIOR_FRACTION_FIELD = "senior_fraction"
METRIC_NAMES = {
    "actor/tandem_senior_token_frac": "actor/tandem/senior_token_fraction",
    SENIOR_FRACTION_FIELD: "senior_token_fraction",
    "num_handoffs": "mean_handoffs",
}
# The release's script names -> ours: its "sentence handoff" runs the `step` strategy
# (`tandem_eval/MATH/eval_sentence_handoff.py` is kept as the release's entry point).
SCRIPT_NAMES = {"eval_sentence_handoff": "eval_step_handoff"}
# Checkpoint names of the junior update's state in earlier versions -> the present ones
# (`tandem.process.junior_update.CHECKPOINT_NAME`): HF TRL's file and verl's folder.
JUNIOR_CHECKPOINT_NAMES = {"tandem_junior.pt": "junior.pt", "tandem_junior": "junior"}


def metric_name(name: str) -> str:
    """A logged metric's present name (an unchanged name is returned as it is)."""
    return METRIC_NAMES.get(name, name)


def junior_checkpoint(folder, name: str) -> Path:
    """The junior's saved state under `folder`: `folder/name`, else its legacy name there, else `folder/name`."""
    present = Path(folder) / name
    if present.exists():
        return present
    old = [Path(folder) / o for o, new in JUNIOR_CHECKPOINT_NAMES.items() if new == name]
    return next((p for p in old if p.exists()), present)


def placement(d: dict) -> dict:
    """The release's `frozen_gpu_devices` (the junior on GPUs of its own) is our `split` placement."""
    if PLACEMENT_KEY not in d:
        return d
    d = dict(d)
    devices = d.pop(PLACEMENT_KEY)
    if devices in (None, "", [], ()):
        return d
    if d.get("placement", "split") != "split":
        raise TandemError(f"{PLACEMENT_KEY}={devices!r} (legacy for placement=split) contradicts "
                          f"placement={d['placement']!r}; keep one of them")
    return {**d, "placement": "split"}


def pop_switch(d: dict, default):
    """Remove the on/off switch from `d` (`enable`, legacy `enabled`) and return its value, else `default`."""
    if "enabled" in d and "enable" in d and bool(d["enabled"]) != bool(d["enable"]):
        raise TandemError("both 'enabled' (legacy) and 'enable' are set with different values; keep 'enable'")
    legacy = d.pop("enabled", default)
    return d.pop("enable", legacy)
