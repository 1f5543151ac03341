"""The update of the senior on one batch: GRPO advantages, then the PPO clipped surrogate.

As verl computes it for the paper's configuration: advantage = (r - group mean) / (group
std + eps); the clipped surrogate against the old log-probs, `token-mean` aggregated, with
every per-token term weighted by `token_weights`: 1 senior, `loss.junior_token_loss_weight`
(default 0) junior, divided by `loss.loss_denominator`. No KL and no entropy bonus by default.

Departures from verl, all for a single CPU process: one optimizer step per mini-batch with
no micro-batching; with one epoch and one mini-batch the old log-probs are the first
forward's (detached), which is exactly the ratio-1 on-policy update verl makes; otherwise
they are recomputed before the update. The engine's own `senior_logprobs` (KV-cached
decoding) agree with the recompute only to ~1e-5, so they are not used as old log-probs;
their largest gap is logged as `logprob_engine_diff_max`.
"""

from __future__ import annotations

import torch

from tandem.loss.grpo import actor_loss, get_adv_estimator_fn
from tandem.process.junior_update import after_optimizer_step
from tandem.loss.logprobs import join_prompt_response, response_logprobs
from tandem.io.metric_log import GRAD_NORM, JUNIOR_UPDATES, LOGPROB_ENGINE_DIFF_MAX, LOSS, LR
from tandem.loss.senior_gate import require_authorship_mask, token_weights
from tandem_app.train.finite import check_step_finite
from tandem_app.train.schedule import lr_at
from tandem_app.train.train_config import TrainConfig


class PPOUpdate:
    """Updates `senior` through `opt`; `base` is the KL reference, `junior` follows the senior by `junior_update`."""

    def __init__(self, cfg: TrainConfig, senior, opt, tokenizer, base=None, junior=None, junior_update=None):
        self.cfg, self.senior, self.opt, self.tokenizer = cfg, senior, opt, tokenizer
        self.base, self.junior, self.junior_update = base, junior, junior_update

    def __call__(self, batch: dict, step: int) -> dict:
        """The PPO epoch(s) over the batch's mini-batches; the mean of their metrics (`pg_clipfrac`, `loss`, ...)."""
        cfg, dev = self.cfg, self.cfg.device
        authorship = require_authorship_mask(batch, tandem=cfg.is_tandem)
        response_mask = batch["response_mask"]
        junior_weight = cfg.loss.junior_token_loss_weight if cfg.is_tandem else 0.0
        weights = token_weights(authorship, response_mask, junior_weight).to(dev)
        adv, _ = get_adv_estimator_fn(cfg.adv_estimator)(
            batch["token_level_rewards"], response_mask, batch["index"], cfg.adv_epsilon, cfg.norm_adv_by_std
        )
        adv = adv.to(dev)
        on_policy = cfg.ppo_epochs == 1 and cfg.ppo_mini_batches == 1
        old = None if on_policy else self._logprobs_no_grad(self.senior, batch)
        ref = self._logprobs_no_grad(self.base, batch) if cfg.loss.use_kl_loss else None
        lr = self._set_lr(step)
        bounds = torch.linspace(0, response_mask.shape[0], cfg.ppo_mini_batches + 1).round().long().tolist()
        history, junior_updates = [], 0
        optimizer_step = step * cfg.ppo_epochs * cfg.ppo_mini_batches  # done before this update (steps from 0)
        # How far the engine's KV-cached log-probs are from the recompute (diagnostic only).
        engine_diff = 0.0 if old is None else _max_abs_diff(old, batch["engine_log_probs"], weights)
        for _ in range(cfg.ppo_epochs):
            for lo, hi in zip(bounds, bounds[1:]):
                rows = slice(lo, hi)
                logp, entropy = response_logprobs(
                    self.senior,
                    *self._model_inputs(batch, rows),
                    temperature=cfg.sampling.logprob_temperature,
                    with_entropy=True,
                    entropy_grad=cfg.loss.entropy_coeff != 0,
                )
                if old is None:  # on-policy: one epoch, one mini-batch
                    engine_diff = _max_abs_diff(logp.detach(), batch["engine_log_probs"], weights)
                old_mb = logp.detach() if old is None else old[rows]
                loss, m = actor_loss(
                    cfg.loss, logp, old_mb, adv[rows], weights[rows], entropy, None if ref is None else ref[rows],
                    response_mask=response_mask[rows].to(dev),
                )
                history.append(self._optimizer_step(loss, m))
                optimizer_step += 1
                if self.junior_update is not None:
                    junior_updates += after_optimizer_step(self.junior_update, self.junior, self.senior, optimizer_step)
        out = {k: sum(h[k] for h in history) / len(history) for k in history[0]}
        out[LR], out[LOGPROB_ENGINE_DIFF_MAX] = lr, engine_diff
        if self.junior_update is not None and not self.junior_update.frozen:
            out[JUNIOR_UPDATES] = float(junior_updates)
        return out

    def _set_lr(self, step: int) -> float:
        cfg = self.cfg
        lr = lr_at(step, cfg.lr, cfg.warmup_steps, cfg.steps, 1.0) if cfg.warmup_steps else cfg.lr
        for g in self.opt.param_groups:
            g["lr"] = lr
        return lr

    def _optimizer_step(self, loss: torch.Tensor, m: dict) -> dict:
        """Backward, clip and step; a loss or gradient norm that is not finite stops before the step."""
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        m[GRAD_NORM] = float(torch.nn.utils.clip_grad_norm_(self.senior.parameters(), self.cfg.grad_clip))
        m[LOSS] = loss.item()
        check_step_finite(m[LOSS], m[GRAD_NORM])  # before the update: the weights stay finite
        self.opt.step()
        return m

    def _model_inputs(self, batch: dict, rows: slice | None = None):
        rows = rows or slice(None)
        input_ids, attention, response_index = join_prompt_response(
            batch["prompts"][rows], batch["response_token_lists"][rows], self.tokenizer.pad_token_id
        )
        T = batch["responses"].shape[1]
        if response_index.shape[1] < T:  # a mini-batch whose responses are all shorter than the batch's
            response_index = torch.nn.functional.pad(response_index, (0, T - response_index.shape[1]))
        dev = self.cfg.device
        return input_ids.to(dev), attention.to(dev), response_index.to(dev)

    @torch.no_grad()
    def _logprobs_no_grad(self, model, batch: dict) -> torch.Tensor:
        temperature = self.cfg.sampling.logprob_temperature
        return response_logprobs(model, *self._model_inputs(batch), temperature=temperature)[0]


def _max_abs_diff(a: torch.Tensor, b: torch.Tensor, weights: torch.Tensor) -> float:
    valid = weights.cpu() > 0
    return (a.cpu() - b.to(a.dtype))[valid].abs().max().item() if bool(valid.any()) else 0.0
