"""The tandem agent loop inside verl 0.9.1's real single-turn loop, with a fake LLM server.

Needs verl's `verl-core` extras (cachetools, TransferQueue, ...), which the CPU test
environment may lack: then the module is skipped. The fake server records the sampling
params it receives and answers with fixed tokens, so the test checks what the engine
would be asked (the request key in `extra_args`, solo for validation) and what verl
would store (an `authorship_mask` tensor equal to the replayed mask).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import torch

for mod in ("cachetools", "transfer_queue", "uvicorn"):
    pytest.importorskip(mod, reason=f"verl's verl-core extras are not installed ({mod})")

from hydra import compose, initialize_config_dir  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402
from verl.experimental.agent_loop.agent_loop import DictConfigWrap  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from tandem.process.boundaries import config_boundary_lookup  # noqa: E402
from tandem.errors import TandemError  # noqa: E402
from tandem_verl.agent_loop import VALIDATE_KEY, TandemAgentLoop  # noqa: E402
from tandem_verl.hydra_settings import run_settings  # noqa: E402
from tandem_verl.wiring import apply_tandem  # noqa: E402
from tandem.process.coins import request_key  # noqa: E402
from tandem.process.authorship import replay_mask  # noqa: E402
from vllm_source.requests import EXTRA_KEY, EXTRA_SOLO  # noqa: E402

CONFIG_DIR = Path(__file__).resolve().parents[1] / "verl" / "config"


class FakeServer:
    def __init__(self, tokens):
        self.tokens, self.params = tokens, []

    async def generate(self, request_id, prompt_ids, sampling_params, **kwargs):
        self.params.append(dict(sampling_params))
        return TokenOutput(token_ids=list(self.tokens), stop_reason="completed", num_preempted=0)


@pytest.fixture()
def loop_and_server(shared_data):
    tokenizer = AutoTokenizer.from_pretrained(shared_data / "tokenizers" / "qwen3")
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        cfg = compose(
            config_name="tandem_trainer",
            overrides=["actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.model.path=org/senior",
                       "actor_rollout_ref.rollout.load_format=auto", "tandem.max_gap_tokens=3"],
        )
    apply_tandem(cfg)
    tokens = tokenizer("The answer is forty two, so we box it: \\boxed{42}.", add_special_tokens=False)["input_ids"]
    server = FakeServer(tokens)

    def make_loop():  # inside the running event loop: verl's agent loop binds to it
        return TandemAgentLoop(
            trainer_config=DictConfigWrap(cfg), server_manager=server, tokenizer=tokenizer, processor=None,
            dataset_cls=RLHFDataset, data_config=DictConfigWrap(cfg.data), hf_model_type="qwen3",
        )

    return make_loop, server, tokens, cfg, tokenizer


def run(make_loop, validate: bool | None, **kwargs):
    kwargs = {"raw_prompt": [{"role": "user", "content": "What is 6*7?"}], "uid": "u-1", "session_id": 3, **kwargs}
    if validate is not None:
        kwargs[VALIDATE_KEY] = validate

    async def main():
        return await make_loop().run({"temperature": 0.6, "top_p": 1.0, "top_k": -1, "logprobs": False}, **kwargs)

    return asyncio.run(main())


def test_training_request_carries_its_key_and_returns_the_replayed_mask(loop_and_server):
    loop, server, tokens, cfg, tokenizer = loop_and_server
    out = run(loop, validate=False)
    key = request_key("u-1", 3)
    assert server.params[0]["extra_args"] == {EXTRA_KEY: key}
    tcfg = run_settings(cfg).tandem.process
    lookup = config_boundary_lookup(tcfg, tokenizer, len(tokenizer))
    want = replay_mask(tcfg, lookup, torch.tensor([tokens]), [key])[0]
    stored = out.as_dict()["authorship_mask"]
    assert stored.dtype == torch.int64 and torch.equal(stored, want)
    assert 0 < int(want.sum()) < len(tokens)  # both authors wrote something


def test_validation_request_is_solo(loop_and_server):
    loop, server, tokens, _, _ = loop_and_server
    out = run(loop, validate=True)
    assert server.params[0]["extra_args"] == {EXTRA_SOLO: True}
    assert out.authorship_mask == [1] * len(tokens)


def test_agent_loop_refuses_to_run_without_the_validation_flag(loop_and_server):
    loop, _, _, _, _ = loop_and_server
    with pytest.raises(TandemError, match="TandemAgentLoopManager"):
        run(loop, validate=None)
