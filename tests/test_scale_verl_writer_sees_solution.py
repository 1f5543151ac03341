"""`partner_reward.writer_sees_solution` on verl: the writer's prompt holds the row's solution, the scorer reads the plain one.

Inside verl 0.9.1's real single-turn loop with a fake LLM server that records the prompt ids
it is sent: a training request of the tandem loop and of the solo loop (GRPO + partner score,
RLT's setting) gets `tandem.rewards.solution_prompt.writer_prompt_ids`, and carries the plain prompt
as `plain_prompt_ids` for the partner score; validation keeps the plain prompt; a row without
a solution is one error before anything is generated. The wiring's refusals run without Ray.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

for mod in ("cachetools", "transfer_queue", "uvicorn"):
    pytest.importorskip(mod, reason=f"verl's verl-core extras are not installed ({mod})")

from hydra import compose, initialize_config_dir  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402
from verl.experimental.agent_loop.agent_loop import DictConfigWrap  # noqa: E402
from verl.utils.dataset.rl_dataset import RLHFDataset  # noqa: E402
from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from tandem.errors import TandemError  # noqa: E402
from tandem.rewards.solution_prompt import writer_prompt_ids  # noqa: E402
from tandem_verl.agent_loop import TandemAgentLoop  # noqa: E402
from tandem_verl.names import AGENT_LOOP, AGENT_LOOP_MANAGER, PLAIN_PROMPT, SOLUTION_AGENT_LOOP, VALIDATE_KEY  # noqa: E402
from tandem_verl.solution_writer import SolutionWriterAgentLoop  # noqa: E402
from tandem_verl.wiring import apply_tandem  # noqa: E402

CONFIG_DIR = Path(__file__).resolve().parents[1] / "verl" / "config"
BASE = ["actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.model.path=org/senior",
        "actor_rollout_ref.rollout.load_format=auto", "tandem.max_gap_tokens=3"]
SETTING = ["partner_reward.weight=0.1", "partner_reward.target=solution", "+partner_reward.writer_sees_solution=true"]
QUESTION, SOLUTION = "What is 6*7?", "6*7 = 42, so the answer is 42."


def config(*overrides: str):
    with initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
        return compose(config_name="tandem_trainer", overrides=[*BASE, *overrides])


class RecordingServer:
    def __init__(self, tokens):
        self.tokens, self.prompts = tokens, []

    async def generate(self, request_id, prompt_ids, sampling_params, **kwargs):
        self.prompts.append(list(prompt_ids))
        return TokenOutput(token_ids=list(self.tokens), stop_reason="completed", num_preempted=0)


def run(cls, cfg, tokenizer, validate: bool, extra_info: dict):
    server = RecordingServer(tokenizer(" It is 42.", add_special_tokens=False)["input_ids"])
    kwargs = {"raw_prompt": [{"role": "user", "content": QUESTION}], "uid": "u-1", "session_id": 0,
              "extra_info": extra_info, VALIDATE_KEY: validate}

    async def main():
        loop = cls(trainer_config=DictConfigWrap(cfg), server_manager=server, tokenizer=tokenizer, processor=None,
                   dataset_cls=RLHFDataset, data_config=DictConfigWrap(cfg.data), hf_model_type="qwen3")
        return await loop.run({"temperature": 0.6, "top_p": 1.0, "top_k": -1, "logprobs": False}, **kwargs)

    return asyncio.run(main()), server


@pytest.fixture(scope="module")
def tokenizer(shared_data):
    return AutoTokenizer.from_pretrained(shared_data / "tokenizers" / "qwen3")


LOOPS = [(TandemAgentLoop, ["tandem.enable=true"]), (SolutionWriterAgentLoop, ["tandem.enable=false"])]


@pytest.mark.parametrize(("cls", "enable"), LOOPS)
def test_a_training_request_prompts_the_writer_with_the_solution_and_keeps_the_plain_prompt(tokenizer, cls, enable):
    cfg = config(*enable, *SETTING)
    apply_tandem(cfg)
    plain_out, plain_server = run(cls, config(*enable), tokenizer, False, {"id": "r7", "index": 7})
    out, server = run(cls, cfg, tokenizer, False, {"id": "r7", "index": 7, "solution": SOLUTION})
    assert server.prompts == [writer_prompt_ids(tokenizer, QUESTION, SOLUTION)]
    stored = out.as_dict()
    assert stored[PLAIN_PROMPT].tolist() == plain_server.prompts[0] == plain_out.prompt_ids  # what the scorer reads
    assert stored["prompts"].tolist() == server.prompts[0]
    assert PLAIN_PROMPT not in plain_out.as_dict()


@pytest.mark.parametrize(("cls", "enable"), LOOPS)
def test_validation_keeps_the_plain_prompt(tokenizer, cls, enable):
    cfg = config(*enable, *SETTING)
    apply_tandem(cfg)
    out, server = run(cls, cfg, tokenizer, True, {"id": "v1"})  # validation rows need no solution
    assert server.prompts == [out.prompt_ids] and SOLUTION not in tokenizer.decode(out.prompt_ids)
    assert PLAIN_PROMPT not in out.as_dict()


@pytest.mark.parametrize(("cls", "enable"), LOOPS)
def test_a_training_row_without_a_solution_is_one_error_before_generation(tokenizer, cls, enable):
    cfg = config(*enable, *SETTING)
    apply_tandem(cfg)
    with pytest.raises(TandemError, match=r"^training row r9 \(extra_info.index 9\): no reference solution"):
        run(cls, cfg, tokenizer, False, {"id": "r9", "index": 9, "solution": None})


def test_a_grpo_run_writes_in_the_solution_writers_loop_and_a_tandem_run_in_its_own():
    grpo = config("tandem.enable=false", *SETTING)
    apply_tandem(grpo)
    agent = grpo.actor_rollout_ref.rollout.agent
    assert (agent.default_agent_loop, agent.agent_loop_manager_class) == (SOLUTION_AGENT_LOOP, AGENT_LOOP_MANAGER)
    tandem = config(*SETTING)
    apply_tandem(tandem)
    assert tandem.actor_rollout_ref.rollout.agent.default_agent_loop == AGENT_LOOP


@pytest.mark.parametrize(("overrides", "message"), [
    (["partner_reward.weight=0", "partner_reward.target=solution", "+partner_reward.writer_sees_solution=true"],
     "writer_sees_solution=true shows the writer the solution the partner score scores; set partner_reward.weight > 0"),
    (["partner_reward.weight=0.1", "+partner_reward.writer_sees_solution=true"], "set partner_reward.target=solution"),
    (["tandem.enable=false", *SETTING, "actor_rollout_ref.rollout.agent.default_agent_loop=tool_agent"],
     "default_agent_loop=tool_agent: only verl's single-turn loop can show the writer the solution"),
])
def test_the_setting_is_refused_where_verl_cannot_honour_it(overrides, message):
    with pytest.raises(TandemError, match=message):
        apply_tandem(config(*overrides))


def test_training_data_without_solutions_is_refused_before_ray_starts(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"extra_info": {"id": "a", "index": 0, "solution": "x"}}, {"extra_info": {"id": "b", "index": 1,
                                                                                     "solution": None}}]
    path = tmp_path / "train.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    with pytest.raises(TandemError, match=rf"^{path}: row 1 \(id b\): no reference solution"):
        apply_tandem(config(*SETTING, f"data.train_files={path}"))
