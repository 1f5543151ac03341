"""Tandem training on verl 0.9.1: the Hydra config checked and pointed at the tandem classes.

`apply_tandem` is what `verl/main_tandem_ppo.py` runs on the composed config before Ray
starts: it reads the run's settings once (`settings`: the `tandem:` block and the
`partner_reward` section), sets up the partner score's scorer
(`partner_score_wiring`), refuses what the tandem path cannot honour (`refusals`) and writes the
names verl finds the tandem agent loop, trainer and vLLM engine settings by (`names`). The
senior gate the actor worker applies is `gate`. None of these need a GPU or Ray, so CPU
tests cover them; the classes verl instantiates (agent loop, worker, trainer) live in the
sibling modules.
"""

from __future__ import annotations

import logging

from omegaconf import DictConfig, open_dict

from tandem.trainers import require
from tandem_verl.names import AGENT_LOOP, AGENT_LOOP_MANAGER, TRAINER_MODE, TRANSFER_WRITER_AGENT_LOOP, WORKER_KEY
from tandem_verl.partner_score_wiring import wire_partner_reward
from tandem_verl.refusals import refuse_unsupported
from tandem_verl.hydra_settings import RunSettings, run_settings
from vllm_source.engine_config import tandem_engine_kwargs
from vllm_source.placement import check_split_world

logger = logging.getLogger(__name__)

# tandem_trainer.yaml's defaults list names this (empty) node, which only verl/main_tandem_ppo.py
# registers: verl's stock `verl.trainer.main_ppo` cannot compose the file, so it can never
# run a `tandem:` block it would ignore (plain GRPO under a tandem name).
ENTRY_GROUP, ENTRY_NODE = "launched_by", "verl_main_tandem_ppo"
# The vLLM engine arguments that name an attention backend (vllm_source.split_attention.requested_backend).
ATTENTION_KEYS = ("attention_backend", "attention_config")


def register_entry_node() -> None:
    """Provide the defaults entry that lets `tandem_trainer.yaml` compose (our entry point only)."""
    from hydra.core.config_store import ConfigStore

    ConfigStore.instance().store(group=ENTRY_GROUP, name=ENTRY_NODE, node={}, package="_global_")


def apply_tandem(config: DictConfig) -> RunSettings:
    """Read and validate the run's settings and point verl at the tandem classes; mutates `config`.

    With `tandem.enable=False` the config is left untouched (plain GRPO), but for the
    partner score's scorer where `partner_reward.weight > 0`, and with `partner_reward.kind=transfer`
    for a tandem engine that hosts the base (or `tandem.junior_model`) as the receiver beside a
    solo writer (`tandem_verl.transfer_reward.TransferWriterAgentLoop`).
    """
    settings = run_settings(config)
    t, receiver = settings.tandem, settings.partner.transfers
    if receiver and not t.enable:  # checked before the partner wiring names its trainer mode
        if not t.process.junior_update_rule.frozen:
            require("verl", "grpo_receiver_follows", rule=t.process.junior_update)
        refuse_unsupported(config, t)
    wire_partner_reward(config, settings)
    if not (t.enable or receiver):
        return settings
    if t.enable:
        refuse_unsupported(config, t)
    require("verl", "placements", t.process.placement)
    arr = config.actor_rollout_ref
    if t.process.placement == "split":  # a rollout replica = 2 tensor-parallel ranks: senior, junior
        check_split_world(arr.rollout.tensor_model_parallel_size, arr.rollout.pipeline_model_parallel_size)
    # The attention backend the user named for vLLM, so that split checks it (or, on GPUs, names one it can use).
    vllm_kwargs = arr.rollout.get("engine_kwargs", {}).get("vllm", None) or {}
    named = {k: vllm_kwargs[k] for k in ATTENTION_KEYS if vllm_kwargs.get(k) is not None}
    engine = tandem_engine_kwargs(t.process, arr.model.path, **named)
    with open_dict(config):
        arr.rollout.engine_kwargs.vllm.hf_overrides = engine["hf_overrides"]
        arr.rollout.engine_kwargs.vllm.logits_processors = engine["logits_processors"]
        if "attention_backend" in engine and "attention_backend" not in named:  # split's default on GPUs
            arr.rollout.engine_kwargs.vllm.attention_backend = engine["attention_backend"]
        arr.rollout.agent.agent_loop_manager_class = AGENT_LOOP_MANAGER
    if not t.enable:  # GRPO + transfer: the writer is solo; verl's own actor worker and the partner trainer
        with open_dict(config):
            arr.rollout.agent.default_agent_loop = TRANSFER_WRITER_AGENT_LOOP
        return settings
    with open_dict(config):
        arr.rollout.agent.default_agent_loop = AGENT_LOOP
        arr[WORKER_KEY] = t.loss.tandem_settings()
        config.trainer.v1.trainer_mode = TRAINER_MODE
    logger.info("tandem loss settings: %s", t.loss.tandem_settings())
    if not arr.rollout.enforce_eager:
        logger.warning("tandem rollout compiled (enforce_eager=False): where this has run is in model_spec/SCALE.md; "
                       "scripts/gpu_check.sh checks CUDA graphs on a GPU")
    return settings
