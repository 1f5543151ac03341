"""The senior gate on verl 0.9.1's actor batch: the authorship mask enters verl's loss here.

verl 0.9.1 computes the token-mean denominator from `loss_mask` (in the engine, before the
loss function) and passes `response_mask` to the policy loss, the entropy and the KL term.
Before the actor update `apply_senior_gate` replaces `response_mask` by the token weights of
`tandem.loss.senior_gate.token_weights` (1 senior, `junior_token_loss_weight` junior, 0 padding),
so every term's numerator counts senior tokens only. `loss_denominator` decides `loss_mask`:
`senior_tokens` replaces it too (the denominator counts senior tokens); `all_response_tokens`
leaves it alone (the denominator counts every response token, as the release's verl does
with its `loss_mask = response_mask`). verl's `ppo_loss` casts the mask to bool, so this
path takes `junior_token_loss_weight` in {0, 1} (`tandem_block` refuses fractions).

No GPU and no Ray: CPU tests call these on hand-built batches.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from tandem.errors import TandemError
from tandem.loss.loss_config import TandemLossConfig
from tandem.io.metric_log import GATED_JUNIOR_TOKENS, TANDEM_PREFIX, batch_metrics
from tandem.rollout.contract import RolloutStats, rollout_stats
from tandem.loss.senior_gate import require_authorship_mask, token_weights


@dataclass
class GateCounts(RolloutStats):
    """The batch's rollout statistics plus the junior tokens the gate gave loss weight 0 (summed over ranks)."""

    gated_junior_tokens: float = 0.0

    def metrics(self, prefix: str = TANDEM_PREFIX) -> dict[str, float]:
        return {**super().metrics(prefix), **batch_metrics({GATED_JUNIOR_TOKENS: self.gated_junior_tokens}, prefix)}


def _flat(t: torch.Tensor):
    """(values, per-row lengths or shape, rebuild) for a jagged nested or a padded [B, T] tensor."""
    if t.is_nested:
        offsets = t.offsets()
        lengths = offsets.diff().tolist()
        # Rebuilt as verl does (as_nested_tensor of the rows): from_jagged without max_seqlen pads to the total.
        return t.values(), ("nested", offsets), lambda v: torch.nested.as_nested_tensor(
            list(v.split(lengths)), layout=torch.jagged
        )
    return t.reshape(-1), ("padded", tuple(t.shape)), lambda v: v.reshape(t.shape)


def _same_layout(a, b) -> bool:
    if a[0] != b[0]:
        return False
    return torch.equal(a[1], b[1]) if a[0] == "nested" else a[1] == b[1]


def apply_senior_gate(data, junior_token_loss_weight: float, loss_denominator: str) -> GateCounts:
    """Replace `response_mask` of a verl actor batch by the senior gate, in place; `loss_mask` too
    when `loss_denominator` is `senior_tokens` (see the module docstring).

    `data` is the TensorDict verl 0.9.1 hands to `TrainingWorker.train_mini_batch`: jagged
    nested [B, (T_i)] masks from TransferQueue, or padded [B, T] ones. Raises `TandemError`
    when the batch has no `authorship_mask` (fail closed) or its layout differs.
    """
    TandemLossConfig(junior_token_loss_weight, loss_denominator)  # validates both
    response_mask = data["response_mask"]
    flat_resp, layout, rebuild = _flat(response_mask)
    authorship = data.get("authorship_mask", None)
    flat_auth = None
    if authorship is not None:
        flat_auth, auth_layout, _ = _flat(authorship)
        if not _same_layout(layout, auth_layout):
            raise TandemError("authorship_mask and response_mask have different per-response lengths")
    flat_auth = require_authorship_mask({"authorship_mask": flat_auth, "response_mask": flat_resp}, tandem=True)
    weights = token_weights(flat_auth, flat_resp, junior_token_loss_weight)
    gate = rebuild(weights.to(flat_resp.dtype))
    if "loss_mask" in data.keys():
        if not _same_layout(layout, _flat(data["loss_mask"])[1]):
            raise TandemError("loss_mask and response_mask have different layouts; cannot gate the loss")
        if loss_denominator == "senior_tokens":
            data["loss_mask"] = gate
    elif loss_denominator == "all_response_tokens":
        # verl's engine counts the denominator from loss_mask; without one it would count the gate.
        data["loss_mask"] = response_mask
    data["response_mask"] = gate
    stats = rollout_stats(_padded(flat_auth, layout), _padded(flat_resp, layout))
    gated = float((flat_resp.bool() & ~flat_auth.bool() & (weights == 0)).sum())
    return GateCounts(**asdict(stats), gated_junior_tokens=gated)


def senior_rollout_probs_diff_max(data) -> float | None:
    """max |p_rollout - p_trainer| over senior-written tokens, or None without rollout log-probs.

    verl's `training/rollout_probs_diff_max` covers every response token; a tandem engine's
    log-probs (`processed_logprobs`) are the author's, so junior tokens differ from the
    trainer's senior once the senior has taken a step. On senior tokens alone the two agree
    when the weight sync reached the engine's senior (the scale smoke checks it after each
    sync). Call before `apply_senior_gate` (which replaces `response_mask`).
    """
    if "rollout_log_probs" not in data.keys() or "old_log_probs" not in data.keys():
        return None
    flat_resp, layout, _ = _flat(data["response_mask"])
    parts = [_flat(data[k]) for k in ("authorship_mask", "rollout_log_probs", "old_log_probs")]
    if not all(_same_layout(layout, part[1]) for part in parts):
        raise TandemError("rollout_log_probs / old_log_probs / authorship_mask and response_mask differ in layout")
    (auth, _, _), (rollout, _, _), (old, _, _) = parts
    senior = flat_resp.bool() & auth.bool()
    if not bool(senior.any()):
        return 0.0
    return float((rollout.float().exp() - old.float().exp()).abs()[senior].max())


def _padded(flat: torch.Tensor, layout) -> torch.Tensor:
    """A flat mask back to right-padded [B, T] rows (zeros after each response)."""
    if layout[0] == "nested":
        return torch.nested.nested_tensor_from_jagged(flat, layout[1]).to_padded_tensor(0)
    return flat.reshape(layout[1])
