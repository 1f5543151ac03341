"""The writer who sees the solution on verl (`partner_reward.writer_sees_solution`): the rollout prompt it reads.

verl's single-turn agent loop builds a request's prompt ids from the row's chat messages
(`ct_build_initial_tokens`). With the setting on, a training request's prompt is instead
`tandem.rewards.solution_prompt.writer_prompt_ids(tokenizer, question, solution)`: the question is the
row's user turn, the solution its `extra_info.solution`. The plain prompt verl would have
built travels beside it as `plain_prompt_ids`, because the partner score's student reads the
plain question, never the writer's prompt (`tandem_verl.partner_score`). Validation requests
keep the plain prompt: validation measures the writer solo on the question.

`SolutionWriterMixin` does this for any single-turn loop: `TandemAgentLoop` (a tandem team
writes) and `SolutionWriterAgentLoop` (a GRPO writer scored by its base, RLT's own setting).
Both need `TandemAgentLoopManager`, which marks validation requests.
"""

from __future__ import annotations

from typing import Any

import torch
from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, register
from verl.experimental.agent_loop.single_turn_agent_loop import SingleTurnAgentLoop

from tandem.errors import TandemError
from tandem.rewards.solution_prompt import require_solution, writer_prompt_ids
from tandem_verl.names import PLAIN_PROMPT, SOLUTION_AGENT_LOOP, VALIDATE_KEY
from tandem_verl.hydra_settings import run_settings


def row_name(kwargs: dict) -> str:
    """How an error names the training row: its id and index from `extra_info`."""
    extra = kwargs.get("extra_info") or {}
    return f"training row {extra.get('id', '?')} (extra_info.index {extra.get('index', '?')})"


def user_question(messages: list[dict]) -> str:
    """The row's question: its (last) user turn, as the plain prompt shows it."""
    users = [m["content"] for m in messages if m.get("role") == "user" and isinstance(m.get("content"), str)]
    if not users:
        raise TandemError("partner_reward.writer_sees_solution=true: a training row has no text user turn to show "
                          "the writer; prepare it with scripts/prepare_deepscaler.py")
    return users[-1]


class PlainPromptOutput(AgentLoopOutput):
    plain_prompt_ids: list[int] | None = None
    """The plain question prompt the partner score's student reads, where the writer read another one."""

    def as_dict(self) -> dict[str, Any]:
        out = super().as_dict()
        if out.get(PLAIN_PROMPT) is not None:
            out[PLAIN_PROMPT] = torch.tensor(out[PLAIN_PROMPT], dtype=torch.int64)
        return out


class SolutionWriterMixin:
    """Gives a single-turn loop's training requests the writer's prompt; see the module docstring."""

    _solution: str | None = None  # set per request: verl builds one agent loop per request
    _plain_prompt_ids: list[int] | None = None

    def prepare_writer(self, validate: bool, kwargs: dict) -> None:
        """Before generation: take the row's solution (one error naming a row without one)."""
        if not validate and run_settings(self.config).partner.writer_sees_solution:
            self._solution = require_solution((kwargs.get("extra_info") or {}).get("solution"), row_name(kwargs))
            self._row = row_name(kwargs)

    async def ct_build_initial_tokens(self, messages, *args, **kwargs) -> list[int]:
        plain = await super().ct_build_initial_tokens(messages, *args, **kwargs)
        if self._solution is None:
            return plain
        self._plain_prompt_ids = list(plain)
        ids = writer_prompt_ids(self.tokenizer, user_question(list(messages)), self._solution)
        limit = self.rollout_config.prompt_length
        if len(ids) > limit:
            raise TandemError(f"{self._row}: the writer's prompt (question and solution) is {len(ids)} tokens but "
                              f"rollout.prompt_length={limit}; raise data.max_prompt_length or drop long solutions")
        return ids

    def with_plain_prompt(self, out: AgentLoopOutput, cls=PlainPromptOutput, **fields) -> AgentLoopOutput:
        """`out` as `cls`, carrying the plain prompt ids where the writer read its own prompt."""
        extra = {PLAIN_PROMPT: self._plain_prompt_ids} if self._plain_prompt_ids is not None else {}
        return cls(**out.model_dump(exclude_unset=True), **extra, **fields)


@register(SOLUTION_AGENT_LOOP)
class SolutionWriterAgentLoop(SolutionWriterMixin, SingleTurnAgentLoop):
    """verl's single-turn loop for a solo writer that sees the solution (GRPO + partner score, RLT's setting)."""

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        if VALIDATE_KEY not in kwargs:
            raise TandemError(f"{SOLUTION_AGENT_LOOP} needs TandemAgentLoopManager (it marks validation requests)")
        self.prepare_writer(bool(kwargs.pop(VALIDATE_KEY)), kwargs)
        return self.with_plain_prompt(await super().run(sampling_params, **kwargs))
