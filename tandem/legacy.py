"""The released code's names and spellings, translated in one place.

The paper's release (CSSLab/Tandem-RLVR) and this project's earlier versions spell some
settings differently. Every way a config arrives (YAML and `key=value`, verl's `tandem:`
block, `$VLLM_TANDEM_CONFIG`, the CLI's `--method`) reads them through this file;
`model_spec/TERMINOLOGY.md` lists them beside the paper's names.
"""

from __future__ import annotations

from tandem.errors import TandemError

# Legacy key of the tandem process -> ours (`TandemConfig.ALIASES`).
PROCESS_KEYS = {
    "prob_primary": "prob_senior",
    "frozen_model": "junior_model",
    "first_model": "first_author",
    "boundary_token_ids_path": "boundary_token_ids",  # the release's VLLM_TANDEM_CONFIG names the file so
}
# Legacy key of the loss settings -> ours (`tandem.grpo.TandemLossConfig.ALIASES`).
LOSS_KEYS = {"tandem_jr_tkn_weight": "junior_token_loss_weight"}
# Loss keys that the release's configs and our earlier ones put beside the process's keys.
LOSS_KEYS_BESIDE_PROCESS = ("junior_token_loss_weight", *LOSS_KEYS, "loss_denominator")
# Legacy author names -> the paper's (`first_author`).
AUTHOR_NAMES = {"primary": "senior", "hot": "senior", "frozen": "junior"}
# Method names -> ours: `trl` is the paper's abbreviation of tandem training.
METHOD_NAMES = {"trl": "tandem"}


def placement(d: dict) -> dict:
    """The release's `frozen_gpu_devices` (the junior on GPUs of its own) is our `split` placement."""
    if "frozen_gpu_devices" not in d:
        return d
    d = dict(d)
    devices = d.pop("frozen_gpu_devices")
    if devices in (None, "", [], ()):
        return d
    if d.get("placement", "split") != "split":
        raise TandemError(f"frozen_gpu_devices={devices!r} (legacy for placement=split) contradicts "
                          f"placement={d['placement']!r}; keep one of them")
    return {**d, "placement": "split"}


def pop_switch(d: dict, default):
    """Remove the on/off switch from `d` (`enable`, legacy `enabled`) and return its value, else `default`."""
    if "enabled" in d and "enable" in d and bool(d["enabled"]) != bool(d["enable"]):
        raise TandemError("both 'enabled' (legacy) and 'enable' are set with different values; keep 'enable'")
    legacy = d.pop("enabled", default)
    return d.pop("enable", legacy)
