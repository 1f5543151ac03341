"""GRPO math shared by every training backend: advantages, the PPO clipped loss, aggregation.

The functions compute what verl 0.9.1 (`verl.trainer.ppo.core_algos`) computes for the
paper's configuration, and `tests/test_grpo_verl_equivalence.py` checks that on the same
tensors. Estimators and losses are registered by name as in verl
(`@register_adv_est`, `@register_policy_loss`).

Tandem enters through the per-token loss weights of the senior gate (`tandem.loss.senior_gate`)
and the two loss settings of `tandem.loss.loss_config.TandemLossConfig`; the weights replace
verl's `response_mask` in the numerator of every term (policy loss, entropy, KL), and
`loss_denominator` picks the token-mean's denominator.

Shapes: B = responses in the batch, T = padded response length.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
import torch

from tandem.errors import TandemError
from tandem.loss.loss_config import AGG_MODES, KL_TYPES, PolicyLossConfig
from tandem.io.metric_log import ENTROPY, KL_LOSS, PG_CLIPFRAC, PG_CLIPFRAC_LOWER, PG_LOSS, PPO_KL

ADV_ESTIMATORS: dict[str, Callable] = {}
POLICY_LOSSES: dict[str, Callable] = {}


def _registrar(table: dict[str, Callable], kind: str, name: str):
    """Decorator: register a function in `table` under `name`; a second function under one name is refused."""

    def decorator(fn):
        if name in table and table[name] is not fn:
            raise ValueError(f"{kind} {name!r} is already registered")
        table[name] = fn
        return fn

    return decorator


def _lookup(table: dict[str, Callable], kind: str, name: str) -> Callable:
    if name not in table:
        raise TandemError(f"unknown {kind} {name!r}; choose one of {', '.join(table)}")
    return table[name]


def register_adv_est(name: str):
    """Decorator: register an advantage estimator under `name`."""
    return _registrar(ADV_ESTIMATORS, "advantage estimator", name)


def get_adv_estimator_fn(name: str) -> Callable:
    return _lookup(ADV_ESTIMATORS, "advantage estimator", name)


def register_policy_loss(name: str):
    """Decorator: register a policy loss under `name`."""
    return _registrar(POLICY_LOSSES, "policy loss", name)


def get_policy_loss_fn(name: str) -> Callable:
    return _lookup(POLICY_LOSSES, "policy loss", name)


# --- advantages -----------------------------------------------------------------------


@register_adv_est("grpo")
def compute_grpo_outcome_advantage(
    token_level_rewards: torch.Tensor,
    response_mask: torch.Tensor,
    index: Sequence[Hashable],
    epsilon: float = 1e-6,
    norm_adv_by_std_in_grpo: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """GRPO outcome advantage: (score - group mean) / (group std + epsilon), broadcast over tokens.

    token_level_rewards: [B, T] (the score is the row sum); response_mask: [B, T];
    index: length-B group ids (responses to the same prompt share one). The std is
    unbiased (torch.std); a group of one gets mean 0 and std 1, as in verl.
    `norm_adv_by_std_in_grpo=False` gives Dr.GRPO (mean-centred only).
    Returns (advantages, returns), both [B, T] and equal.
    """
    scores = token_level_rewards.sum(dim=-1)
    groups: dict[Hashable, list[int]] = {}
    for i, key in enumerate(list(index)):
        groups.setdefault(key.item() if hasattr(key, "item") else key, []).append(i)
    with torch.no_grad():
        out = torch.empty_like(scores)
        for rows in groups.values():
            s = scores[rows]
            mean, std = (s.mean(), s.std()) if len(rows) > 1 else (torch.tensor(0.0), torch.tensor(1.0))
            out[rows] = (s - mean) / (std + epsilon) if norm_adv_by_std_in_grpo else s - mean
        adv = out.unsqueeze(-1) * response_mask
    return adv, adv


# --- aggregation ------------------------------------------------------------------------


def masked_sum(values: torch.Tensor, weights: torch.Tensor, dim=None) -> torch.Tensor:
    """Sum of values * weights; values where the weight is 0 (maybe NaN) never leak in."""
    valid = torch.where(weights != 0, values, torch.zeros_like(values))
    return (valid * weights).sum() if dim is None else (valid * weights).sum(dim=dim)


def masked_mean(values: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """Weighted mean (verl's masked_mean: denominator + 1e-8)."""
    return masked_sum(values, weights) / (weights.sum() + 1e-8)


def _safe(denominator: torch.Tensor) -> torch.Tensor:
    """A zero denominator (nothing the senior wrote) gives a zero loss instead of NaN."""
    return torch.where(denominator > 0, denominator, torch.ones_like(denominator))


def agg_loss(
    loss_mat: torch.Tensor,
    weights: torch.Tensor,
    mode: str = "token-mean",
    horizon: int | None = None,
    denominator: torch.Tensor | None = None,
):
    """Aggregate a per-token loss [B, T] into a scalar under float token weights [B, T].

    token-mean: sum(w * l) / sum(d), where `denominator` d [B, T] is the weights themselves
    when None (junior tokens at weight 0 neither contribute nor dilute) or the response mask
    for the release's normalisation (`loss_denominator=all_response_tokens`).
    The seq-mean modes average over responses with any non-zero d, and seq-mean-token-mean
    divides each response's sum by its own sum of d.
    `horizon` scales seq-mean-token-sum-norm (default T).
    """
    counts = weights if denominator is None else denominator.to(weights.dtype)
    if mode == "token-mean":
        return masked_sum(loss_mat, weights) / _safe(counts.sum())
    if mode == "token-sum":
        return masked_sum(loss_mat, weights)
    seq_weight = counts.sum(dim=-1)
    has_tokens = (seq_weight > 0).float()
    if mode in ("seq-mean-token-sum", "seq-mean-token-sum-norm"):
        seq_loss = masked_sum(loss_mat, weights, dim=-1)
        loss = masked_sum(seq_loss, has_tokens) / _safe(has_tokens.sum())
        if mode == "seq-mean-token-sum-norm":
            loss = loss / (horizon or loss_mat.shape[-1])
        return loss
    if mode == "seq-mean-token-mean":
        seq_loss = masked_sum(loss_mat, weights, dim=-1) / (seq_weight + 1e-8)
        return masked_sum(seq_loss, has_tokens) / _safe(has_tokens.sum())
    raise TandemError(f"unknown loss_agg_mode {mode!r}; choose one of {', '.join(AGG_MODES)}")


# --- policy loss ------------------------------------------------------------------------


@register_policy_loss("vanilla")
def compute_policy_loss_vanilla(
    old_log_prob: torch.Tensor,
    log_prob: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    loss_agg_mode: str = "token-mean",
    config: PolicyLossConfig | None = None,
    denominator: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """PPO clipped surrogate with optional dual clip; all inputs [B, T].

    ratio = exp(clamp(log_prob - old_log_prob, -20, 20));
    loss = max(-A * ratio, -A * clip(ratio, 1 - eps_low, 1 + eps_high)), and for A < 0
    additionally min(., -A * clip_ratio_c). Returns (scalar loss, metrics) where metrics
    are weighted means: pg_clipfrac, ppo_kl, pg_clipfrac_lower. `denominator`: see `agg_loss`.
    """
    cfg = config or PolicyLossConfig()
    low = cfg.clip_ratio if cfg.clip_ratio_low is None else cfg.clip_ratio_low
    high = cfg.clip_ratio if cfg.clip_ratio_high is None else cfg.clip_ratio_high
    neg_kl = torch.clamp(log_prob - old_log_prob, min=-20.0, max=20.0)
    ratio = torch.exp(neg_kl)
    loss_unclipped = -advantages * ratio
    loss_clipped = -advantages * torch.clamp(ratio, 1 - low, 1 + high)
    loss = torch.maximum(loss_unclipped, loss_clipped)
    metrics = {
        PG_CLIPFRAC: masked_mean(torch.gt(loss_clipped, loss_unclipped).float(), weights),
        PPO_KL: masked_mean(-neg_kl, weights),
        PG_CLIPFRAC_LOWER: torch.zeros(()),
    }
    if cfg.clip_ratio_c is not None:
        loss_dual = -advantages * cfg.clip_ratio_c
        lower_hit = torch.gt(loss, loss_dual) * (advantages < 0).float()
        metrics[PG_CLIPFRAC_LOWER] = masked_mean(lower_hit, weights)
        loss = torch.where(advantages < 0, torch.min(loss_dual, loss), loss)
    return agg_loss(loss, weights, loss_agg_mode, denominator=denominator), {k: v.detach() for k, v in metrics.items()}


# --- entropy and KL ---------------------------------------------------------------------


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Categorical entropy per position: logits [..., V] -> [...]."""
    p = torch.softmax(logits, dim=-1)
    return torch.logsumexp(logits, dim=-1) - (p * logits).sum(dim=-1)


def kl_penalty(log_prob: torch.Tensor, ref_log_prob: torch.Tensor, kind: str = "low_var_kl") -> torch.Tensor:
    """Per-token KL estimate between the policy and the reference (Schulman's k1/k2/k3)."""
    if kind in ("k1", "kl"):
        return log_prob - ref_log_prob
    if kind == "abs":
        return (log_prob - ref_log_prob).abs()
    if kind in ("k2", "mse"):
        return 0.5 * (log_prob - ref_log_prob).square()
    if kind in ("k3", "low_var_kl"):
        kl = torch.clamp(ref_log_prob - log_prob, min=-20, max=20)
        return torch.clamp(torch.exp(kl) - kl - 1, min=-10, max=10)
    raise TandemError(f"unknown kl_loss_type {kind!r}; choose one of {', '.join(KL_TYPES)}")


def actor_loss(
    cfg: PolicyLossConfig,
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    weights: torch.Tensor,
    entropy: torch.Tensor | None = None,
    ref_log_prob: torch.Tensor | None = None,
    response_mask: torch.Tensor | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The full actor objective (verl's `ppo_loss`): policy loss - entropy_coeff * H + kl_coef * KL.

    The same `weights` [B, T] (see `token_weights`) gate all three terms; their denominator is
    set by `cfg.loss_denominator` (`response_mask` [B, T] is needed for `all_response_tokens`).
    """
    denominator = None
    if cfg.loss_denominator == "all_response_tokens":
        if response_mask is None:
            raise TandemError("loss_denominator=all_response_tokens needs the response_mask; pass it to actor_loss")
        denominator = torch.as_tensor(response_mask).to(weights.device, weights.dtype)
    pg_loss, pg_metrics = get_policy_loss_fn(cfg.policy_loss)(
        old_log_prob, log_prob, advantages, weights, cfg.loss_agg_mode, cfg, denominator=denominator
    )
    loss = pg_loss
    metrics = {PG_LOSS: pg_loss.item(), **{k: v.item() for k, v in pg_metrics.items()}}
    if entropy is not None:
        entropy_loss = agg_loss(entropy, weights, cfg.loss_agg_mode, denominator=denominator)
        loss = loss - cfg.entropy_coeff * entropy_loss
        metrics[ENTROPY] = entropy_loss.item()
    if cfg.use_kl_loss:
        if ref_log_prob is None:
            raise TandemError("use_kl_loss is on but no reference log-probs were computed; pass ref_log_prob")
        kl = kl_penalty(log_prob, ref_log_prob, cfg.kl_loss_type)
        kl_loss = agg_loss(kl, weights, cfg.loss_agg_mode, denominator=denominator)
        loss = loss + cfg.kl_loss_coef * kl_loss
        metrics[KL_LOSS] = kl_loss.item()
    return loss, metrics
