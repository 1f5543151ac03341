"""What the tandem path refuses in a verl config, each in one line naming the setting and the fix.

`refuse_unsupported` runs before Ray starts (`tandem_verl.wiring.apply_tandem`): a setting
the tandem rollout or the senior gate cannot honour stops the launch instead of training
something else under a tandem name; what verl runs of the tandem process and the partner reward is
its entry in `tandem.trainers`, asked with `require`. `optimizer_steps_per_step` is the count a junior that
follows the senior is checked against (and driven by, in `tandem_verl.trainer`).
"""

from __future__ import annotations

from omegaconf import DictConfig

from tandem.errors import TandemError
from tandem.process.junior_update import check_self_paired, ema_precision_error, steps_per_sync_error
from tandem.trainers import require
from tandem_verl.tandem_block import TandemVerlConfig

ENGINE_KWARGS_TAKEN = {"hf_overrides", "logits_processors", "speculative_config"}  # set by the tandem path


def refuse_unsupported(config: DictConfig, t: TandemVerlConfig) -> None:
    """Fail closed on settings the tandem path cannot honour."""
    arr, rollout = config.actor_rollout_ref, config.actor_rollout_ref.rollout
    checks = [
        (rollout.name == "vllm", f"rollout.name={rollout.name}: the tandem rollout is vLLM only"),
        (rollout.mode == "async", "rollout.mode must be 'async' (verl 0.9.1's server mode)"),
        (bool(config.trainer.use_v1), "trainer.use_v1=False: the tandem trainer is a v1 trainer"),
        (config.trainer.v1.trainer_mode == "sync", f"trainer.v1.trainer_mode={config.trainer.v1.trainer_mode}"),
        (rollout.load_format != "dummy", "rollout.load_format=dummy would leave the junior random; use auto"),
        (rollout.pipeline_model_parallel_size == 1, "rollout pipeline parallelism is not supported"),
        (not rollout.disaggregation.enabled, "prefill/decode disaggregation is not supported"),
        (not rollout.multi_turn.enable, "multi-turn / tool agent loops are not supported"),
        (rollout.quantization is None, "rollout quantization is not supported (it owns hf_overrides)"),
        ((arr.model.get("lora", {}) or {}).get("rank", 0) in (0, None), "LoRA is not supported"),
        (not (arr.model.get("mtp", {}) or {}).get("enable", False), "MTP speculative rollout is not supported"),
        (not (config.get("distillation", {}) or {}).get("enabled", False), "distillation is not supported"),
        (not config.algorithm.use_kl_in_reward, "use_kl_in_reward would put junior tokens' KL into the reward"),
        (not (config.algorithm.get("rollout_correction") or {}).get("bypass_mode", False),
         "rollout_correction.bypass_mode uses rollout log-probs (the senior/junior mixture) as the senior's"),
        _naive_checkpoint_engine(rollout),
    ]
    for ok, why in checks:
        if not ok:
            raise TandemError(f"tandem training: {why}")
    _refuse_following_junior(config, t)
    taken = ENGINE_KWARGS_TAKEN & set(rollout.engine_kwargs.vllm or {})
    if taken:
        raise TandemError(f"rollout.engine_kwargs.vllm.{sorted(taken)[0]} is set by the tandem path; remove it")


def _naive_checkpoint_engine(rollout: DictConfig) -> tuple[bool, str]:
    """verl's non-naive checkpoint engines reload layerwise via the meta device, the junior's layers too."""
    backend = (rollout.get("checkpoint_engine") or {}).get("backend", "naive")
    return backend == "naive", (
        f"rollout.checkpoint_engine.backend={backend}: its layerwise reload would wipe the junior; "
        "set actor_rollout_ref.rollout.checkpoint_engine.backend=naive"
    )


def _refuse_following_junior(config: DictConfig, t: TandemVerlConfig) -> None:
    """A junior that follows the senior needs the senior's own base beside it in every rollout worker."""
    rule, rollout = t.process.junior_update_rule, config.actor_rollout_ref.rollout
    if rule.frozen:
        return
    require("verl", "junior_update_kinds", rule.kind)
    check_self_paired(rule, config.actor_rollout_ref.model.path, t.process.junior_model)
    require("verl", "following_junior_placements", t.process.placement, rule=rule.text)
    if rule.kind == "ema" and str(rollout.get("dtype", "bfloat16")) not in ("float32", "fp32"):
        raise TandemError(ema_precision_error(rule, str(rollout.get("dtype", "bfloat16")))
                          + " (actor_rollout_ref.rollout.dtype=float32)")
    if int(rollout.get("data_parallel_size", 1) or 1) != 1:
        raise TandemError(f"tandem.junior_update={rule.text} with rollout.data_parallel_size="
                          f"{rollout.data_parallel_size}: the junior's updates reach the tensor-parallel workers of "
                          "one data-parallel shard only; use more replicas instead (data_parallel_size=1)")
    why = steps_per_sync_error(rule, optimizer_steps_per_step(config))
    if why:
        actor = config.actor_rollout_ref.actor
        raise TandemError(f"tandem.{why} (verl: data.train_batch_size={config.data.train_batch_size} / "
                          f"actor.ppo_mini_batch_size={actor.ppo_mini_batch_size} x ppo_epochs={actor.ppo_epochs})")


def optimizer_steps_per_step(config: DictConfig, batch_multiple: int = 1) -> int:
    """The senior's optimizer steps in one verl trainer step: mini-batches x epochs, the batch's samples
    padded to `batch_multiple` as verl's `_balance_batch` pads them (known once the workers exist)."""
    actor, n = config.actor_rollout_ref.actor, int(config.actor_rollout_ref.rollout.n)
    samples = -(-int(config.data.train_batch_size) * n // batch_multiple) * batch_multiple
    return -(-samples // (int(actor.ppo_mini_batch_size) * n)) * int(actor.get("ppo_epochs", 1) or 1)
