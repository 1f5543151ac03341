"""Chat formatting of task problems, deterministic batch selection, and padding.

A prompt is the chat template applied to the user turn with the assistant's generation
prompt; a response is what the model writes after it and ends in `<|im_end|>`. SFT
trains on exactly the token sequences the RL rollouts produce (prompt ids + response
ids, tokenised separately), so the base and the trainer agree on every boundary.
"""

from __future__ import annotations

import random

import torch

from tandem.errors import TandemError
from tandem.task import Problem

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


def pad_right(rows: list[list], value, dtype=torch.int64, length: int | None = None) -> torch.Tensor:
    """[B, L] tensor of the rows padded on the right with `value`."""
    L = length if length is not None else max((len(r) for r in rows), default=0)
    out = torch.full((len(rows), max(L, 1)), value, dtype=dtype)
    for i, r in enumerate(rows):
        if r:
            out[i, : len(r)] = torch.tensor(r, dtype=dtype)
    return out


def join_prompt_response(prompts: list[list[int]], responses: list[list[int]], pad_id: int):
    """Right-padded prompt+response sequences.

    Returns input_ids [B, L], attention_mask [B, L], and response_index [B, T]: the
    position in input_ids of each response token (padding positions point at 0),
    with T the longest response.
    """
    seqs = [p + r for p, r in zip(prompts, responses)]
    input_ids = pad_right(seqs, pad_id)
    attention_mask = pad_right([[1] * len(s) for s in seqs], 0)
    T = max(1, max(len(r) for r in responses))
    starts = torch.tensor([len(p) for p in prompts])[:, None]
    response_index = starts + torch.arange(T)[None, :]
    lengths = torch.tensor([len(r) for r in responses])[:, None]
    response_index = torch.where(torch.arange(T)[None, :] < lengths, response_index, torch.zeros_like(response_index))
    return input_ids, attention_mask, response_index
