"""`sft_budget=tokens`: every teacher's student trains on the same number of gradient tokens (issue 44), counted on
the batches the SFT itself draws; the settings that cannot hold are refused in one line."""

from __future__ import annotations

import pytest

from tandem.errors import TandemError
from tandem_app.distill.config import DistillConfig
from tandem_app.distill.student_sft import sft_steps, steps_for_tokens
from tandem_app.train.data import batch_indices
from tandem_app.train.sft import sft_batch


def _rows(lengths: list[int]) -> list[dict]:
    return [{"student_prompt_ids": [7, 8, 9], "student_response_ids": list(range(1, n + 1))} for n in lengths]


def _loss_tokens(rows: list[dict], batch_size: int, seed: int, steps: int) -> int:
    """The response tokens under the SFT's loss over `steps` steps, read from the SFT's own batches and labels."""
    examples = [(r["student_prompt_ids"], r["student_response_ids"]) for r in rows]
    return sum(int((sft_batch([examples[i] for i in batch_indices(len(examples), batch_size, seed, s)], 0)[1]
                    != -100).sum()) for s in range(steps))


def test_terse_and_verbose_teachers_students_see_the_same_gradient_tokens():
    terse, verbose = _rows([30 + i % 5 for i in range(64)]), _rows([60 + i % 9 for i in range(64)])
    budget, batch = 20_000, 8
    got = {}
    for name, rows in (("terse", terse), ("verbose", verbose)):
        cfg = DistillConfig(sft_budget="tokens", sft_tokens=budget, batch_size=batch)
        steps, tokens = sft_steps(cfg, rows)
        assert tokens == _loss_tokens(rows, batch, cfg.seed, steps)  # what the SFT's loss covers
        assert budget <= tokens < budget + batch * max(len(r["student_response_ids"]) for r in rows)  # one batch over
        got[name] = steps
    assert got["terse"] > 1.7 * got["verbose"]  # about twice the steps for half the tokens per trace
    # under a steps budget the terse student sees about half the tokens
    same = DistillConfig(steps=got["verbose"], batch_size=batch)
    assert sft_steps(same, terse)[1] < 0.6 * sft_steps(same, verbose)[1]


def test_steps_for_tokens_is_the_fewest_steps_reaching_the_budget():
    lengths = [10, 20, 30, 40]
    steps, tokens = steps_for_tokens(lengths, 2, 0, 100)
    before = sum(lengths[i] for s in range(steps - 1) for i in batch_indices(4, 2, 0, s))
    assert before < 100 <= tokens


@pytest.mark.parametrize("settings, message", [
    ({"sft_budget": "tokens"}, "sft_budget=tokens needs sft_tokens >= 1"),
    ({"sft_tokens": 500}, "sft_tokens=500 is read only with sft_budget=tokens"),
    ({"sft_budget": "tokens", "sft_tokens": 500, "sft_backend": "verl"}, "use sft_backend=embedded"),
    ({"sft_budget": "epochs"}, "unknown sft_budget 'epochs'"),
])
def test_a_token_budget_that_cannot_hold_is_refused(settings, message):
    with pytest.raises(TandemError, match=message):
        DistillConfig(**settings)
