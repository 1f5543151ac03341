"""Chat formatting of task problems and deterministic batch selection.

A prompt is the chat template applied to the user turn with the assistant's generation
prompt; a response is what the model writes after it and ends in `<|im_end|>`. SFT
trains on exactly the token sequences the RL rollouts produce (prompt ids + response
ids, tokenised separately), so the base and the trainer agree on every boundary.
With `partner_reward.writer_sees_solution` a training rollout's writer reads RLT's
teacher prompt instead, the question and its solution (`writer_prompt_ids_batch`).
"""

from __future__ import annotations

import random

from tandem.errors import TandemError
from tandem.rewards.solution_prompt import require_solution, writer_prompt_text
from tandem_app.task import Problem

IM_END = "<|im_end|>"


def prompt_ids(tokenizer, problem: Problem) -> list[int]:
    """Token ids of the chat prompt for `problem`, ending in the assistant header."""
    messages = [{"role": "user", "content": problem.prompt}]
    ids = tokenizer.apply_chat_template(messages, tokenize=True, add_generation_prompt=True)
    if isinstance(ids, dict) or hasattr(ids, "keys"):  # transformers 5 may return a BatchEncoding
        ids = ids["input_ids"]
    return list(ids)


def prompt_ids_batch(tokenizer, problems: list[Problem]) -> list[list[int]]:
    """`prompt_ids` for many problems at once (render the template, then one batched tokenisation)."""
    texts = [
        tokenizer.apply_chat_template(
            [{"role": "user", "content": p.prompt}], tokenize=False, add_generation_prompt=True
        )
        for p in problems
    ]
    return tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []


def writer_prompt_ids_batch(tokenizer, problems: list[Problem]) -> list[list[int]]:
    """The prompts of a writer who sees each problem's solution (`tandem.rewards.solution_prompt.writer_prompt_ids`),
    tokenised in one batch; a problem without a solution is one error naming it, before any generation."""
    texts = [writer_prompt_text(tokenizer, p.prompt, require_solution(p.solution, f"training problem {p.id}"))
             for p in problems]
    return tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []


def response_ids(tokenizer, text: str) -> list[int]:
    """Token ids of an assistant response `text`, terminated by `<|im_end|>`."""
    end = tokenizer.convert_tokens_to_ids(IM_END)
    if end is None or end == tokenizer.unk_token_id:
        raise TandemError(
            f"tokenizer has no {IM_END} token; use a ChatML tokenizer (e.g. from `tandem-rlvr build-tiny`)"
        )
    return tokenizer(text, add_special_tokens=False)["input_ids"] + [end]


def batch_indices(n_items: int, batch_size: int, seed: int, step: int) -> list[int]:
    """Indices of the items used at `step`: a pure function of (seed, step), so resume needs no state."""
    if n_items < 1:
        raise TandemError("the problem pool is empty; raise n_train_problems")
    rng = random.Random(f"batch/{seed}/{step}")
    if batch_size <= n_items:
        return rng.sample(range(n_items), batch_size)
    return [rng.randrange(n_items) for _ in range(batch_size)]
