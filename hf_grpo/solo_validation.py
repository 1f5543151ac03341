"""Validation of a TRL-trained senior: greedy accuracy of the senior alone, graded like the reward.

The senior generates alone (`solo=True`) on the reference engine, over the model TRL trains
as the rollout reads it (`hf_grpo.trainer_access`), and `tandem.grading.reward` grades each
response against the row's `answer`, as `hf_grpo.rewards.grader_reward` does in training.
"""

from __future__ import annotations

import torch

from hf_grpo.trainer_access import reachable_senior, tokenize_prompts
from tandem.process.coins import request_key
from tandem.grading import reward
from tandem.rollout.sampling import SamplingConfig
from tandem_backends.registry import build_backend


def solo_accuracy(trainer, rows: list[dict], max_new_tokens: int, batch: int = 64) -> float:
    """Greedy accuracy of the senior alone over `rows` (each with `prompt` and `answer`)."""
    engine = build_backend("engine", reachable_senior(trainer), tokenizer=trainer.processing_class)
    sampling = SamplingConfig(temperature=0.0, max_new_tokens=max_new_tokens)
    correct = 0.0
    for start in range(0, len(rows), batch):
        chunk = rows[start: start + batch]
        prompts = tokenize_prompts(trainer, [r["prompt"] for r in chunk])
        keys = [request_key(f"val/{start + i}", 0) for i in range(len(chunk))]
        with torch.no_grad():
            rollouts = engine.generate(prompts, sampling, keys, solo=True)
        correct += sum(reward(r.text, row["answer"]) for r, row in zip(rollouts, chunk))
    return correct / max(1, len(rows))
