"""The verl-side tandem config: legacy aliases, refusals, and the wiring into verl 0.9.1's Hydra config."""

from __future__ import annotations

from pathlib import Path

import pytest
from omegaconf import OmegaConf

pytest.importorskip("verl", reason="verl 0.9.1 is not installed")
pytest.importorskip("hydra", reason="hydra-core is not installed")

from hydra import compose, initialize_config_dir  # noqa: E402

from tandem.errors import TandemError  # noqa: E402
from tandem_verl.names import (  # noqa: E402
    AGENT_LOOP,
    AGENT_LOOP_MANAGER,
    PARTNER_TRAINER_MODE,
    SCORER_KEY,
    TRAINER_MODE,
    TRANSFER_WRITER_AGENT_LOOP,
)
from tandem_verl.refusals import optimizer_steps_per_step  # noqa: E402
from tandem_verl.tandem_block import TandemVerlConfig, worker_loss_config  # noqa: E402
from tandem_verl.wiring import apply_tandem  # noqa: E402
from vllm_source.engine_config import ARCHITECTURE, PROCESSOR_CLASS  # noqa: E402

CONFIG_DIR = Path(__file__).resolve().parents[1] / "verl" / "config"
BASE = ["actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.model.path=org/senior",
        "actor_rollout_ref.rollout.load_format=auto"]


def tandem_config(*overrides: str):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        return compose(config_name="tandem_trainer", overrides=[*BASE, *overrides])


def test_legacy_keys_are_aliases():
    t = TandemVerlConfig.from_dict(
        {"enabled": True, "prob_primary": 0.3, "tandem_jr_tkn_weight": 0, "frozen_model": "org/junior"}
    )
    assert t.enable and t.process.prob_senior == 0.3 and t.process.junior_model == "org/junior"
    assert t.junior_token_loss_weight == 0.0


def test_fractional_junior_weight_is_refused_on_the_verl_path():
    with pytest.raises(TandemError, match="0 \\(paper\\) or 1"):
        TandemVerlConfig.from_dict({"enable": True, "junior_token_loss_weight": 0.5})


@pytest.mark.parametrize("bad", [{"prob_seniors": 0.5}, {"senior_model": "x"}, {"placement": "junior_gpu"},
                                 {"frozen_gpu_devices": [1], "placement": "shared"}])
def test_unknown_obsolete_or_contradictory_keys_are_refused(bad):
    with pytest.raises(TandemError):
        TandemVerlConfig.from_dict({"enable": True, **bad})


def test_the_releases_junior_device_is_the_legacy_spelling_of_split():
    assert TandemVerlConfig.from_dict({"enable": True, "frozen_gpu_devices": [1]}).process.placement == "split"
    assert TandemVerlConfig.from_dict({"enable": True, "placement": "split"}).process.placement == "split"
    assert TandemVerlConfig.from_dict({"enable": True}).process.placement == "shared"


def test_split_placement_needs_a_rollout_replica_of_two_tensor_parallel_ranks():
    with pytest.raises(TandemError, match="tensor_parallel_size must be 2"):
        apply_tandem(tandem_config("tandem.placement=split", "actor_rollout_ref.rollout.tensor_model_parallel_size=1"))
    cfg = tandem_config("tandem.placement=split", "actor_rollout_ref.rollout.tensor_model_parallel_size=2")
    apply_tandem(cfg)
    assert cfg.actor_rollout_ref.rollout.engine_kwargs.vllm.hf_overrides.architectures == ["TandemSplitForCausalLM"]


def test_apply_tandem_points_verl_at_the_tandem_classes():
    cfg = tandem_config("tandem.prob_senior=0.25")
    t = apply_tandem(cfg).tandem
    arr = cfg.actor_rollout_ref
    assert t.enable and cfg.trainer.v1.trainer_mode == TRAINER_MODE
    assert arr.rollout.agent.default_agent_loop == AGENT_LOOP
    assert arr.rollout.agent.agent_loop_manager_class == AGENT_LOOP_MANAGER
    assert list(arr.rollout.engine_kwargs.vllm.logits_processors) == [PROCESSOR_CLASS]
    overrides = OmegaConf.to_container(arr.rollout.engine_kwargs.vllm.hf_overrides)
    assert overrides["architectures"] == [ARCHITECTURE]
    assert overrides["tandem"]["prob_senior"] == 0.25
    assert overrides["tandem"]["junior_model"] == "org/senior"  # self-paired by default
    loss = worker_loss_config(arr)
    assert (loss.junior_token_loss_weight, loss.loss_denominator) == (0.0, "all_response_tokens")  # the yaml's


def test_typo_in_the_tandem_block_fails_with_the_suggestion():
    with pytest.raises(TandemError, match=r"^unknown config key 'tandem.prob_senoir': did you mean tandem.prob_senior\?$"):
        apply_tandem(tandem_config("+tandem.prob_senoir=0.9"))


def test_loss_denominator_reaches_the_worker():
    cfg = tandem_config("tandem.loss_denominator=senior_tokens")
    apply_tandem(cfg)
    assert worker_loss_config(cfg.actor_rollout_ref).loss_denominator == "senior_tokens"


def test_apply_tandem_leaves_a_disabled_config_untouched():
    cfg = tandem_config("tandem.enable=false")
    before = OmegaConf.to_container(cfg)
    assert not apply_tandem(cfg).tandem.enable
    assert OmegaConf.to_container(cfg) == before


@pytest.mark.parametrize(
    "override",
    [
        "actor_rollout_ref.rollout.name=sglang",
        "actor_rollout_ref.rollout.load_format=dummy",
        "algorithm.use_kl_in_reward=true",
        "algorithm.rollout_correction.bypass_mode=true",
        "trainer.v1.trainer_mode=separate_async",
        "+actor_rollout_ref.rollout.engine_kwargs.vllm.hf_overrides={a: 1}",
    ],
)
def test_apply_tandem_refuses_unhonourable_settings(override):
    with pytest.raises(TandemError):
        apply_tandem(tandem_config(override))


ONE_STEP = ["data.train_batch_size=8", "actor_rollout_ref.actor.ppo_mini_batch_size=8"]  # 1 optimizer step a sync


@pytest.mark.parametrize("rule", ["sync:4", "ema:0.99"])
def test_a_junior_that_follows_the_senior_is_wired_for_the_self_paired_shared_engine(rule):
    t = apply_tandem(tandem_config(f"tandem.junior_update={rule}", "actor_rollout_ref.rollout.dtype=float32", *ONE_STEP)).tandem
    assert t.process.junior_update == rule and t.process.placement == "shared"


def test_an_ema_junior_in_a_bfloat16_rollout_is_refused_and_a_copied_one_is_not():
    with pytest.raises(TandemError, match=r"ema:0.9 on a junior in bfloat16: .* \(actor_rollout_ref.rollout.dtype=float32\)"):
        apply_tandem(tandem_config("tandem.junior_update=ema:0.9", *ONE_STEP))  # verl's rollout default: bfloat16
    apply_tandem(tandem_config("tandem.junior_update=sync:1", *ONE_STEP))  # a copy is exact in any dtype


LAUNCHERS = ["data.train_batch_size=16", "actor_rollout_ref.actor.ppo_mini_batch_size=8"]  # verl/deepscaler_common.sh


@pytest.mark.parametrize(("rule", "extra", "message"), [
    ("sync:1", [], r"sync:1 copies after every 1 optimizer steps, .* every 2; use sync:K with K a multiple of 2"),
    ("ema:0.9", ["actor_rollout_ref.rollout.dtype=float32"], r"ema:0.9 blends after every optimizer step, .* every 2"),
    ("sync:2", ["actor_rollout_ref.actor.ppo_epochs=2"], r"only every 4; .* \(verl: data.train_batch_size=16 / "
                                                         r"actor.ppo_mini_batch_size=8 x ppo_epochs=2\)"),
])
def test_a_rule_a_weight_sync_every_m_optimizer_steps_cannot_honour_is_refused(rule, extra, message):
    """The rule counts optimizer steps; verl's engine sees the senior once per trainer step (the launchers: 2)."""
    with pytest.raises(TandemError, match=message):
        apply_tandem(tandem_config(f"tandem.junior_update={rule}", *LAUNCHERS, *extra))
    apply_tandem(tandem_config("tandem.junior_update=sync:2", *LAUNCHERS))  # copies after steps 2, 4, ...: at syncs


def test_the_optimizer_steps_of_a_trainer_step_count_the_mini_batches_verls_padding_adds():
    cfg = tandem_config(*LAUNCHERS, "actor_rollout_ref.rollout.n=8")  # 128 samples, 64 per mini-batch
    assert optimizer_steps_per_step(cfg) == 2
    assert optimizer_steps_per_step(cfg, batch_multiple=64) == 2  # 8 data-parallel ranks: no padding
    assert optimizer_steps_per_step(cfg, batch_multiple=192) == 3  # 6 ranks: lcm(6, 64), padded to 192
    cfg.actor_rollout_ref.actor.ppo_epochs = 2
    assert optimizer_steps_per_step(cfg) == 4


@pytest.mark.parametrize("folder", ["junior", "tandem_junior"])  # the present name, an earlier version's
def test_the_junior_updater_asks_the_workers_for_the_last_optimizer_step_of_each_trainer_step(tmp_path, folder):
    from tandem.process.junior_update import parse_junior_update
    from tandem.process.junior_update import JuniorUpdater as JuniorUpdaterProtocol
    from tandem_verl.junior_driver import JuniorUpdater, checkpoint_state

    asked = []

    def call(servers, method, *args):
        asked.append((method, *args))
        return [[{"checksum": 1.0, "changed": 1.0, "max_abs_diff_before": 0.0, "max_abs_diff_after": 0.0,
                  "through": 4.0}]]

    mover = JuniorUpdater(parse_junior_update("sync:2"), [], optimizer_steps=2)
    mover._call = call
    assert isinstance(mover, JuniorUpdaterProtocol)  # update(step), state(), restore(state)
    mover.update(3)
    assert [a for a in asked if a[0] == "tandem_junior_update"] == [("tandem_junior_update", 6)]
    (tmp_path / folder).mkdir()
    mover.restore(checkpoint_state(tmp_path, 3))  # the checkpoint of trainer step 3 holds optimizer step 4's junior
    assert ("tandem_junior_restore", str(tmp_path / folder)) in asked and mover.through == 2
    with pytest.raises(TandemError, match=r"after optimizer step \[4\], expected 6 \(trainer step 3 x 2\)"):
        mover.restore(checkpoint_state(tmp_path, 4))
    mover.save(tmp_path / "global_step_3")
    assert mover.state() == {"folder": str(tmp_path / "global_step_3" / "junior"), "through": 2}


@pytest.mark.parametrize(("overrides", "message"), [
    (["tandem.junior_model=/models/other"], "names another model; drop junior_model or set junior_update=frozen"),
    (["tandem.placement=split", "actor_rollout_ref.rollout.tensor_model_parallel_size=2"],
     "tandem.placement=split: .* set tandem.placement=shared or tandem.junior_update=frozen"),
    (["actor_rollout_ref.rollout.data_parallel_size=2"], r"data_parallel_size=2: .*replicas instead \(data_parallel_size=1\)"),
])
def test_a_junior_that_follows_the_senior_is_refused_where_no_worker_holds_both(overrides, message):
    with pytest.raises(TandemError, match=message):
        apply_tandem(tandem_config("tandem.junior_update=sync:2", *overrides, *ONE_STEP))
    apply_tandem(tandem_config(*overrides))  # frozen: the same settings are fine


@pytest.mark.parametrize("enable", ["true", "false"])
def test_the_partner_score_section_is_strict(enable):
    with pytest.raises(TandemError, match="unknown config key 'partner_reward.kl_maen': did you mean partner_reward.kl_mean"):
        apply_tandem(tandem_config(f"tandem.enable={enable}", "+partner_reward.kl_maen=1"))
    apply_tandem(tandem_config(f"tandem.enable={enable}", "partner_reward.weight=0"))


def test_the_partner_score_asks_verl_for_its_reference_worker_with_no_kl_gradient():
    cfg = tandem_config("partner_reward.weight=0.1")
    apply_tandem(cfg)
    actor = cfg.actor_rollout_ref.actor
    assert actor.use_kl_loss is True and actor.kl_loss_coef == 0.0
    assert SCORER_KEY not in cfg.actor_rollout_ref  # self-paired: verl's reference worker is the junior already


def test_the_partner_score_with_a_smaller_junior_loads_it_as_the_reference_worker():
    cfg = tandem_config("partner_reward.weight=0.1", "tandem.placement=split", "tandem.junior_model=/models/small",
                        "actor_rollout_ref.rollout.tensor_model_parallel_size=2")
    apply_tandem(cfg)
    assert cfg.actor_rollout_ref[SCORER_KEY] == "/models/small"


def test_a_grpo_run_with_the_partner_score_is_scored_by_its_base_on_the_partner_trainer():
    """RLT's setting: verl's reference worker is the base already; a junior named in the tandem block is ignored."""
    cfg = tandem_config("tandem.enable=false", "partner_reward.weight=0.1", "tandem.junior_model=/models/small",
                        "tandem.junior_update=sync:2")
    assert not apply_tandem(cfg).tandem.enable
    assert cfg.trainer.v1.trainer_mode == PARTNER_TRAINER_MODE and SCORER_KEY not in cfg.actor_rollout_ref
    assert cfg.actor_rollout_ref.actor.use_kl_loss is True and cfg.actor_rollout_ref.actor.kl_loss_coef == 0.0
    plain = tandem_config("tandem.enable=false")
    apply_tandem(plain)
    assert plain.trainer.v1.trainer_mode == "sync"  # without the score: verl's stock trainer


@pytest.mark.parametrize(("overrides", "message"), [
    (["tandem.enable=false", "trainer.v1.trainer_mode=separate_async"],
     "trainer.v1.trainer_mode=separate_async: a GRPO run is scored on verl's sync trainer; set trainer.v1.trainer_mode=sync"),
    (["tandem.junior_update=ema:0.5"], "tandem.junior_update=ema:0.5: .* set tandem.junior_update=frozen"),
    (["tandem.junior_model=/models/small", "tandem.placement=split", "actor_rollout_ref.actor.use_kl_loss=true",
      "actor_rollout_ref.actor.kl_loss_coef=0.001", "actor_rollout_ref.rollout.tensor_model_parallel_size=2"],
     "actor.kl_loss_coef=0.001: .* set kl_loss_coef=0 or score a self-paired run"),
])
def test_the_partner_score_is_refused_where_verls_reference_worker_cannot_be_the_scorer(overrides, message):
    with pytest.raises(TandemError, match=f"partner_reward.weight=0.1: {message}"):
        apply_tandem(tandem_config("partner_reward.weight=0.1", *overrides))


TRANSFER = ("partner_reward.weight=0.5", "partner_reward.kind=transfer")


def test_a_grpo_run_with_the_transfer_reward_hosts_its_base_as_the_receiver_beside_a_solo_writer():
    """RLTR on verl: the tandem engine with the base as its junior (self-paired), the writer's loop solo, verl's
    own actor worker on the partner trainer; no reference worker is asked for."""
    cfg = tandem_config("tandem.enable=false", *TRANSFER, "partner_reward.transfer.cuts=[0.3,0.7]")
    assert not apply_tandem(cfg).tandem.enable
    arr = cfg.actor_rollout_ref
    assert cfg.trainer.v1.trainer_mode == PARTNER_TRAINER_MODE
    assert arr.rollout.agent.default_agent_loop == TRANSFER_WRITER_AGENT_LOOP
    assert arr.rollout.agent.agent_loop_manager_class == AGENT_LOOP_MANAGER
    assert arr.rollout.engine_kwargs.vllm.hf_overrides.architectures == [ARCHITECTURE]
    assert arr.rollout.engine_kwargs.vllm.logits_processors == [PROCESSOR_CLASS]
    assert "tandem" not in arr and SCORER_KEY not in arr and arr.actor.use_kl_loss is False


def test_a_tandem_run_with_the_transfer_reward_keeps_its_trainer_and_asks_for_no_scorer():
    cfg = tandem_config("tandem.enable=true", *TRANSFER)
    assert apply_tandem(cfg).tandem.enable
    assert cfg.trainer.v1.trainer_mode == TRAINER_MODE
    assert cfg.actor_rollout_ref.rollout.agent.default_agent_loop == AGENT_LOOP
    assert SCORER_KEY not in cfg.actor_rollout_ref and cfg.actor_rollout_ref.actor.use_kl_loss is False


@pytest.mark.parametrize(("overrides", "message"), [
    (["partner_reward.transfer.receiver=/models/other"],
     "partner_reward.transfer.receiver='/models/other': on verl the receiver is the rollout engine's junior"),
    (["tandem.enable=false", "trainer.v1.trainer_mode=separate_async"], "tandem training: trainer.v1.trainer_mode"),
    (["tandem.enable=false", "actor_rollout_ref.rollout.name=sglang"], "the tandem rollout is vLLM only"),
    (["tandem.enable=false", "tandem.junior_update=sync:1"], "a GRPO run's receiver stays its frozen base"),
    (["partner_reward.transfer.samples=0"], "samples must be an integer >= 1"),
    (["partner_reward.transfer.cuts=[0.5,1.0]"], "cuts: 1.0 is outside \\(0, 1\\)"),
])
def test_the_transfer_reward_is_refused_where_verl_cannot_run_it(overrides, message):
    with pytest.raises(TandemError, match=message) as e:
        apply_tandem(tandem_config(*TRANSFER, *overrides))
    assert "\n" not in str(e.value)


def test_worker_fails_closed_without_the_wiring():
    with pytest.raises(TandemError, match="main_tandem_ppo"):
        worker_loss_config(OmegaConf.create({"actor": {}}))
    with pytest.raises(TandemError, match="missing or incomplete"):
        worker_loss_config(OmegaConf.create({"tandem": {"junior_token_loss_weight": 0.0}}))


def test_verl_dir_is_not_a_package():
    assert not (CONFIG_DIR.parent / "__init__.py").exists()  # would shadow the installed verl


SPLIT = ["tandem.placement=split", "actor_rollout_ref.rollout.tensor_model_parallel_size=2"]
NAMED = "+actor_rollout_ref.rollout.engine_kwargs.vllm.attention_backend="


def test_a_split_rollout_on_gpus_gets_an_attention_backend_that_reads_each_ranks_heads_from_its_layers(monkeypatch):
    """Every verl launcher goes through apply_tandem: the backend reaches vLLM in engine_kwargs.vllm (issue 61)."""
    from vllm_source import placement
    from vllm_source.compat import SPLIT_DEFAULT_BACKEND

    monkeypatch.setattr(placement, "installed_vllm_version", lambda: "0.28.0")
    monkeypatch.setattr(placement, "visible_gpus", lambda: 2)
    cfg = tandem_config(*SPLIT)
    apply_tandem(cfg)
    assert cfg.actor_rollout_ref.rollout.engine_kwargs.vllm.attention_backend == SPLIT_DEFAULT_BACKEND
    cfg = tandem_config(*SPLIT, NAMED + "FLASHINFER")  # one split can use: kept
    apply_tandem(cfg)
    assert cfg.actor_rollout_ref.rollout.engine_kwargs.vllm.attention_backend == "FLASHINFER"
    with pytest.raises(TandemError, match=r"^placement='split' cannot run vLLM 0\.28's FLASH_ATTN attention backend"):
        apply_tandem(tandem_config(*SPLIT, NAMED + "FLASH_ATTN"))
    cfg = tandem_config()  # shared placement: vLLM's own choice
    apply_tandem(cfg)
    assert "attention_backend" not in cfg.actor_rollout_ref.rollout.engine_kwargs.vllm
