"""Tandem training on verl 0.9.1: the config, the senior gate, and the config wiring.

This file holds the verl adapter's logic that needs no GPU and no Ray, so CPU tests
cover it; the classes verl instantiates (agent loop, worker, trainer) live in the
sibling modules and call into here.

Where the authorship mask enters verl's loss (the *senior gate*): verl 0.9.1 computes
the token-mean denominator from `loss_mask` (in the engine, before the loss function)
and passes `response_mask` to the policy loss, the entropy and the KL term. Before the
actor update we replace `response_mask` by the token weights of `tandem.senior_gate.token_weights`
(1 senior, `junior_token_loss_weight` junior, 0 padding), so every term's numerator counts
senior tokens only. `loss_denominator` decides `loss_mask`: `senior_tokens` replaces it
too (the denominator counts senior tokens); `all_response_tokens` leaves it alone (the
denominator counts every response token, as the release's verl does with its
`loss_mask = response_mask`). verl's `ppo_loss` casts the mask to bool, so this path
takes `junior_token_loss_weight` in {0, 1} and refuses fractions.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field

import torch
from omegaconf import DictConfig, OmegaConf, open_dict

from tandem import legacy
from tandem.config import TandemConfig
from tandem.errors import TandemError
from tandem.junior_update import check_self_paired, ema_precision_error, steps_per_sync_error
from tandem.senior_gate import require_authorship_mask, token_weights
from tandem.loss_config import TandemLossConfig
from tandem.rollout import RolloutStats, rollout_stats
from tandem.partner_score import PartnerRewardConfig
from tandem.strict import build, unknown_key, valid_keys
from vllm_source.engine_config import tandem_engine_kwargs
from vllm_source.placement import check_split_world

logger = logging.getLogger(__name__)

TRAINER_MODE = "tandem_sync"  # registered by tandem_verl.trainer
PARTNER_TRAINER_MODE = "partner_sync"  # a GRPO run scored by its base (RLT's setting); tandem_verl.trainer
AGENT_LOOP = "tandem_agent"  # registered by tandem_verl.agent_loop
AGENT_LOOP_MANAGER = "tandem_verl.agent_loop.TandemAgentLoopManager"
REWARD_PATH = "pkg://tandem_verl.reward"
WORKER_KEY = "tandem"  # actor_rollout_ref.tandem: what the actor worker needs
SCORER_KEY = "tandem_scorer"  # actor_rollout_ref.tandem_scorer: the model verl's reference worker loads to score
LOSS_BLOCK_KEYS = tuple(valid_keys(TandemLossConfig))  # loss settings beside the process keys in `tandem:`
# tandem_trainer.yaml's defaults list names this (empty) node, which only verl/main_tandem_ppo.py
# registers: verl's stock `verl.trainer.main_ppo` cannot compose the file, so it can never
# run a `tandem:` block it would ignore (plain GRPO under a tandem name).
ENTRY_GROUP, ENTRY_NODE = "launched_by", "verl_main_tandem_ppo"


def register_entry_node() -> None:
    """Provide the defaults entry that lets `tandem_trainer.yaml` compose (our entry point only)."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(group=ENTRY_GROUP, name=ENTRY_NODE, node={}, package="_global_")


# --- config -----------------------------------------------------------------------------


@dataclass
class TandemVerlConfig:
    """The `tandem:` block of the Hydra config: an on/off switch, the tandem process and the loss settings.

    The block is flat (`tandem.prob_senior`, `tandem.junior_token_loss_weight`,
    `tandem.loss_denominator`); its keys are split here into `process` (TandemConfig) and
    `loss` (TandemLossConfig), each parsed strictly.
    """

    enable: bool = False
    process: TandemConfig = field(default_factory=TandemConfig)
    loss: TandemLossConfig = field(default_factory=TandemLossConfig)

    @classmethod
    def from_dict(cls, d: dict | None) -> TandemVerlConfig:
        """Accepts legacy keys (`enabled`, `prob_primary`, `tandem_jr_tkn_weight`, `frozen_model`)."""
        d = dict(d or {})
        enable = build(_Switch, {"enable": legacy.pop_switch(d, False)}, "tandem").enable
        valid = ["enable", "enabled", "frozen_gpu_devices", *LOSS_BLOCK_KEYS, *valid_keys(TandemConfig)]
        for key in d:
            if key not in valid:
                raise unknown_key(str(key), valid, "tandem")
        loss = build(TandemLossConfig, {k: v for k, v in d.items() if k in LOSS_BLOCK_KEYS}, "tandem")
        process = TandemConfig.from_dict({k: v for k, v in d.items() if k not in LOSS_BLOCK_KEYS}, "tandem")
        if enable and loss.junior_token_loss_weight not in (0.0, 1.0):
            raise TandemError(
                f"junior_token_loss_weight={loss.junior_token_loss_weight}: the verl path supports 0 (paper) or 1, "
                "because verl 0.9.1's ppo_loss casts the loss mask to bool"
            )
        return cls(enable=enable, process=process, loss=loss)

    @classmethod
    def from_hydra(cls, config: DictConfig) -> TandemVerlConfig:
        """The `tandem:` block of a full verl config (absent = disabled)."""
        block = config.get("tandem")
        return cls.from_dict(OmegaConf.to_container(block, resolve=True) if block is not None else None)

    @property
    def junior_token_loss_weight(self) -> float:
        return self.loss.junior_token_loss_weight


@dataclass
class _Switch:
    enable: bool = False


# --- the senior gate ------------------------------------------------------------------------


@dataclass
class GateCounts(RolloutStats):
    """The batch's rollout statistics plus the junior tokens the gate gave loss weight 0 (summed over ranks)."""

    gated_junior_tokens: float = 0.0

    def metrics(self, prefix: str = "tandem/") -> dict[str, float]:
        return {**super().metrics(prefix), prefix + "gated_junior_tokens": self.gated_junior_tokens}


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
    trainer's senior once the senior has moved. On senior tokens alone the two agree when
    the weight sync reached the engine's senior (the scale smoke checks it after each sync).
    Call before `apply_senior_gate` (which replaces `response_mask`).
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


# --- wiring the Hydra config -------------------------------------------------------------------


def _refuse(config: DictConfig, t: TandemVerlConfig) -> None:
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
    _refuse_moving_junior(config, t)
    taken = {"hf_overrides", "logits_processors", "speculative_config"} & set(rollout.engine_kwargs.vllm or {})
    if taken:
        raise TandemError(f"rollout.engine_kwargs.vllm.{sorted(taken)[0]} is set by the tandem path; remove it")


def _refuse_moving_junior(config: DictConfig, t: TandemVerlConfig) -> None:
    """A junior that follows the senior needs the senior's own base beside it in every rollout worker."""
    rule, rollout = t.process.junior_update_rule, config.actor_rollout_ref.rollout
    if rule.frozen:
        return
    check_self_paired(rule, config.actor_rollout_ref.model.path, t.process.junior_model)
    if t.process.placement != "shared":
        raise TandemError(f"tandem.junior_update={rule.text} with tandem.placement={t.process.placement}: the junior "
                          "follows the senior inside each rollout worker, which holds both only with placement=shared; "
                          "set tandem.placement=shared or tandem.junior_update=frozen")
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


def partner_reward_config(config: DictConfig) -> PartnerRewardConfig:
    """The `partner_reward` section, parsed strictly (the same keys as on every trainer)."""
    block = config.get("partner_reward")
    data = OmegaConf.to_container(block) if isinstance(block, DictConfig) else dict(block or {})
    return build(PartnerRewardConfig, data, "partner_reward")


def _wire_partner_reward(config: DictConfig, t: TandemVerlConfig) -> None:
    """The partner score scores with verl's reference worker, loaded with the junior (`tandem_verl.partner`).

    verl builds that worker only for a KL term: a run without one gets `use_kl_loss` with
    coefficient 0 (no gradient). A GRPO run (`tandem.enable=false`) is scored by its base, verl's
    usual reference (RLT's setting), through `PARTNER_TRAINER_MODE`. Refused in one line: a moving
    junior (the reference worker is frozen), a KL term toward a junior that is not the base, and
    a GRPO run on another trainer mode than verl's sync one.
    """
    partner = partner_reward_config(config)
    if not partner.enabled:
        return
    actor, model = config.actor_rollout_ref.actor, config.actor_rollout_ref.model.path
    junior = (t.process.junior_model or model) if t.enable else model  # GRPO: the base scores
    mode = config.trainer.v1.trainer_mode
    checks = [
        (t.enable or mode in ("sync", PARTNER_TRAINER_MODE), f"trainer.v1.trainer_mode={mode}: a GRPO run is scored "
                                                              "on verl's sync trainer; "
                                     "set trainer.v1.trainer_mode=sync"),
        (not t.enable or t.process.junior_update_rule.frozen,
         f"tandem.junior_update={t.process.junior_update}: verl scores with its "
         "reference worker, which stays frozen; set tandem.junior_update=frozen"),
        (junior == model or not actor.use_kl_loss or float(actor.kl_loss_coef) == 0.0,
         f"actor.kl_loss_coef={actor.kl_loss_coef}: verl's reference worker holds the junior {junior!r} to score with, "
         "so the KL term would pull toward it, not the base; set kl_loss_coef=0 or score a self-paired run"),
    ]
    for ok, why in checks:
        if not ok:
            raise TandemError(f"partner_reward.weight={partner.weight}: {why}")
    with open_dict(config):
        if not actor.use_kl_loss:  # verl builds its reference worker for a KL term only
            actor.use_kl_loss, actor.kl_loss_coef = True, 0.0
            logger.info("partner_reward: actor.use_kl_loss=True with kl_loss_coef=0 (verl's reference worker scores)")
        if junior != model:  # the reference worker loads the junior instead of the senior's base
            config.actor_rollout_ref[SCORER_KEY] = junior
        if not t.enable:
            config.trainer.v1.trainer_mode = PARTNER_TRAINER_MODE


def _naive_checkpoint_engine(rollout: DictConfig) -> tuple[bool, str]:
    """verl's non-naive checkpoint engines reload layerwise via the meta device, the junior's layers too."""
    backend = (rollout.get("checkpoint_engine") or {}).get("backend", "naive")
    return backend == "naive", (
        f"rollout.checkpoint_engine.backend={backend}: its layerwise reload would wipe the junior; "
        "set actor_rollout_ref.rollout.checkpoint_engine.backend=naive"
    )


def apply_tandem(config: DictConfig) -> TandemVerlConfig:
    """Validate the `tandem:` block and point verl at the tandem classes; mutates `config`.

    With `tandem.enable=False` the config is left untouched (plain GRPO).
    """
    t = TandemVerlConfig.from_hydra(config)
    _wire_partner_reward(config, t)
    if not t.enable:
        return t
    _refuse(config, t)
    arr = config.actor_rollout_ref
    if t.process.placement == "split":  # a rollout replica = 2 tensor-parallel ranks: senior, junior
        check_split_world(arr.rollout.tensor_model_parallel_size, arr.rollout.pipeline_model_parallel_size)
    engine = tandem_engine_kwargs(t.process, arr.model.path)
    with open_dict(config):
        arr.rollout.engine_kwargs.vllm.hf_overrides = engine["hf_overrides"]
        arr.rollout.engine_kwargs.vllm.logits_processors = engine["logits_processors"]
        arr.rollout.agent.default_agent_loop = AGENT_LOOP
        arr.rollout.agent.agent_loop_manager_class = AGENT_LOOP_MANAGER
        arr[WORKER_KEY] = t.loss.tandem_settings()
        config.trainer.v1.trainer_mode = TRAINER_MODE
    logger.info("tandem loss settings: %s", t.loss.tandem_settings())
    if not arr.rollout.enforce_eager:
        logger.warning("tandem rollout compiled (enforce_eager=False): where this has run is in model_spec/SCALE.md; "
                       "scripts/gpu_check.sh checks CUDA graphs on a GPU")
    return t


def worker_loss_config(actor_rollout_ref: DictConfig) -> TandemLossConfig:
    """The loss settings the actor worker applies; fail closed if the wiring is missing."""
    block = actor_rollout_ref.get(WORKER_KEY)
    if block is None or set(block) != {"junior_token_loss_weight", "loss_denominator"}:
        raise TandemError(
            f"actor_rollout_ref.{WORKER_KEY} is missing or incomplete: start tandem training through "
            "verl/main_tandem_ppo.py (apply_tandem), not verl.trainer.main_ppo"
        )
    return build(TandemLossConfig, OmegaConf.to_container(block) if isinstance(block, DictConfig) else dict(block),
                 f"actor_rollout_ref.{WORKER_KEY}")
