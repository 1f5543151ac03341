"""The verl classes the tandem config selects: registration, dispatch, worker mapping, gate glue.

Needs verl's `verl-core` extras (TransferQueue, uvicorn, cachetools); skipped without them.
Nothing here starts Ray or touches a GPU.
"""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import torch
from tensordict import TensorDict

for mod in ("cachetools", "transfer_queue", "uvicorn"):
    pytest.importorskip(mod, reason=f"verl's verl-core extras are not installed ({mod})")

from hydra import compose, initialize_config_dir  # noqa: E402
from verl.experimental.agent_loop.agent_loop import _agent_loop_registry  # noqa: E402
from verl.single_controller.base.decorator import MAGIC_ATTR  # noqa: E402
from verl.trainer.ppo.utils import Role  # noqa: E402
from verl.trainer.ppo.v1.trainer_base import get_trainer_cls  # noqa: E402
from verl.utils import tensordict_utils as tu  # noqa: E402
from verl.workers.engine_workers import TrainingWorker  # noqa: E402

from tandem.errors import TandemError  # noqa: E402
from tandem_verl import agent_loop as verl_agent_loop, trainer as verl_trainer, workers as verl_workers  # noqa: E402
from tandem_verl.names import AGENT_LOOP, AGENT_LOOP_MANAGER, TRAINER_MODE  # noqa: E402
from tandem_verl.wiring import apply_tandem  # noqa: E402

CONFIG_DIR = Path(__file__).resolve().parents[1] / "verl" / "config"


def test_trainer_and_agent_loop_are_registered_under_the_wired_names():
    assert get_trainer_cls(TRAINER_MODE) is verl_trainer.TandemPPOTrainer
    assert _agent_loop_registry[AGENT_LOOP]["_target_"].endswith("tandem_verl.agent_loop.TandemAgentLoop")
    manager = verl_agent_loop.TandemAgentLoopManager
    assert AGENT_LOOP_MANAGER == f"{manager.__module__}.{manager.__qualname__}"


def dispatch_attrs(fn) -> dict:
    """verl's dispatch attributes, with functools.partial dispatch functions made comparable."""
    attrs = dict(getattr(fn, MAGIC_ATTR))
    mode = attrs["dispatch_mode"]
    if isinstance(mode, dict):
        attrs["dispatch_mode"] = {k: (v.func, v.args) for k, v in mode.items()}
    return attrs


def test_overridden_worker_methods_keep_verls_dispatch_modes():
    for cls, name in [(verl_workers.TandemActorRolloutRefWorker, "init_model"),
                      (verl_workers.SeniorGatedTrainingWorker, "train_mini_batch")]:
        base = cls.__mro__[1]
        assert dispatch_attrs(getattr(cls, name)) == dispatch_attrs(getattr(base, name))


def test_tandem_trainer_maps_the_actor_role_to_the_gated_worker():
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        cfg = compose(config_name="tandem_trainer", overrides=[
            "actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.model.path=org/s",
            "actor_rollout_ref.rollout.load_format=auto", "algorithm.adv_estimator=grpo"])
    apply_tandem(cfg)
    trainer = object.__new__(verl_trainer.TandemPPOTrainer)
    trainer.config = cfg
    trainer._init_resource_pool_mgr()
    worker = trainer.role_worker_mapping[Role.ActorRollout]
    assert worker.__ray_actor_class__ is verl_workers.TandemActorRolloutRefWorker
    assert worker.__ray_actor_class__.actor_worker_cls is verl_workers.SeniorGatedTrainingWorker


def fake_batch():
    nested = lambda rows: torch.nested.nested_tensor([torch.tensor(r) for r in rows], layout=torch.jagged)  # noqa: E731
    return TensorDict({"response_mask": nested([[1, 1, 1], [1, 1]]), "loss_mask": nested([[1, 1, 1], [1, 1]]),
                       "authorship_mask": nested([[1, 0, 1], [0, 0]])}, batch_size=[2])


def test_gated_worker_refuses_to_train_unconfigured():
    worker = object.__new__(verl_workers.SeniorGatedTrainingWorker)
    with pytest.raises(TandemError, match="junior_token_loss_weight"):
        verl_workers.SeniorGatedTrainingWorker.train_mini_batch(worker, fake_batch())


def test_gated_worker_gates_before_verls_update_and_reports_the_senior_fraction(monkeypatch):
    seen = {}

    def verl_update(self, data):  # stands in for verl's TrainingWorker.train_mini_batch
        seen["loss_mask"] = data["loss_mask"].values().tolist()
        return tu.get_tensordict(tensor_dict={}, non_tensor_dict={"metrics": {"loss": [0.1]}})

    monkeypatch.setattr(TrainingWorker, "train_mini_batch", verl_update)
    worker = object.__new__(verl_workers.SeniorGatedTrainingWorker)
    worker.junior_token_loss_weight, worker.loss_denominator = 0.0, "senior_tokens"
    worker.engine = type("E", (), {"get_data_parallel_group": lambda self: None})()
    out = verl_workers.SeniorGatedTrainingWorker.train_mini_batch(worker, fake_batch())
    assert seen["loss_mask"] == [1, 0, 1, 0, 0]
    metrics = tu.get(out, "metrics")
    assert metrics["tandem/senior_token_fraction"] == [pytest.approx(2 / 5)]
    assert metrics["tandem/junior_only_response_fraction"] == [pytest.approx(1 / 2)]


def test_gated_worker_stops_when_no_senior_token_is_left(monkeypatch):
    monkeypatch.setattr(TrainingWorker, "train_mini_batch", lambda self, data: pytest.fail("must not train"))
    worker = object.__new__(verl_workers.SeniorGatedTrainingWorker)
    worker.junior_token_loss_weight, worker.loss_denominator = 0.0, "senior_tokens"
    worker.engine = type("E", (), {"get_data_parallel_group": lambda self: None})()
    batch = fake_batch()
    batch["authorship_mask"] = torch.nested.nested_tensor(
        [torch.tensor([0, 0, 0]), torch.tensor([0, 0])], layout=torch.jagged
    )
    with pytest.raises(TandemError, match="no senior-written token"):
        verl_workers.SeniorGatedTrainingWorker.train_mini_batch(worker, batch)


def _body(fn) -> list[str]:
    """The statements of a function body, as source text without formatting."""
    import ast
    import inspect
    import textwrap

    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    return [ast.unparse(stmt) for stmt in tree.body[0].body if not isinstance(stmt, ast.Expr)
            or not isinstance(getattr(stmt, "value", None), ast.Constant)]


def test_agent_loop_worker_init_does_exactly_what_verls_does_without_zero_argument_super():
    """TandemAgentLoopWorker.__init__ repeats AgentLoopWorkerTQ's (whose `super()` breaks under Ray 2.60)."""
    from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopWorkerTQ

    theirs = _body(AgentLoopWorkerTQ.__ray_actor_class__.__init__)
    ours = _body(verl_agent_loop.TandemAgentLoopWorker.__init__)
    assert theirs[0] == "super().__init__(*args, **kwargs)", "verl changed AgentLoopWorkerTQ.__init__: update ours"
    assert ours == ["AgentLoopWorker.__init__(self, *args, **kwargs)"] + theirs[1:]


def test_moe_weight_loader_patch_reaches_both_parts_of_a_tandem_model(monkeypatch):
    """verl's patch needs `model.model`; on the tandem wrapper it must run on senior and junior instead."""
    pytest.importorskip("vllm", reason="verl's vLLM worker code needs vLLM; the scale lane runs this")
    from verl.workers.rollout.vllm_rollout import utils as vllm_worker_utils

    from tandem_verl import replica as verl_rollout, vllm_worker as verl_vllm_worker

    # what the tandem replica's vLLM workers load; building one installs the routing (TandemWorkerExtension.__new__)
    assert verl_rollout.TandemvLLMHttpServer._get_worker_extension_cls(None) == verl_vllm_worker.EXTENSION
    assert "install()" in inspect.getsource(verl_vllm_worker.TandemWorkerExtension.__new__)
    verl_vllm_worker.install()
    assert getattr(vllm_worker_utils.patch_vllm_moe_model_weight_loader, "_tandem_parts", False)
    seen = []
    monkeypatch.setattr(vllm_worker_utils, "patch_vllm_moe_model_weight_loader",
                        verl_vllm_worker.patch_each_part(seen.append))
    TandemForCausalLM = type("TandemForCausalLM", (), {})
    wrapper, plain = TandemForCausalLM(), object()
    wrapper.senior, wrapper.junior = object(), object()
    vllm_worker_utils.patch_vllm_moe_model_weight_loader(wrapper)
    vllm_worker_utils.patch_vllm_moe_model_weight_loader(plain)
    assert seen == [wrapper.senior, wrapper.junior, plain]


def test_verls_own_moe_patch_refuses_the_tandem_wrapper_which_is_why_the_extension_exists():
    pytest.importorskip("vllm", reason="verl's vLLM patches need vLLM; the scale lane runs this")
    from verl.utils.vllm.patch import SUPPORTED_MOE_MODELS, patch_vllm_moe_model_weight_loader

    if not SUPPORTED_MOE_MODELS:
        pytest.skip("this verl build found no vLLM MoE models; the patch returns before looking at the model")
    TandemForCausalLM = type("TandemForCausalLM", (), {})
    with pytest.raises(ValueError, match="'model' or 'language_model'"):
        patch_vllm_moe_model_weight_loader(TandemForCausalLM())
