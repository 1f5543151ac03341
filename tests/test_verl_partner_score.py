"""The partner score on verl, the parts that need no Ray: golds, target rows, padding (`tandem_verl.partner_score`).

The whole path (verl's reference worker scoring a real run, the terms checked offline) runs in
the scale lane, `tests/test_scale_verl_smoke.py`, run `tandem_split`.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest
import torch

pytest.importorskip("verl", reason="verl 0.9.1 is not installed")

from tandem.errors import TandemError  # noqa: E402
from tandem.models.loading import load_tokenizer  # noqa: E402
from tandem.rewards.partner_config import PartnerRewardConfig  # noqa: E402
from tandem_verl.partner_score import PartnerScorer, as_list, gold_of, padded, scorer_context, target_row  # noqa: E402


def test_the_gold_is_the_answer_or_the_rows_worked_solution():
    assert gold_of({"ground_truth": 42}, {}, "answer", 0) == "42"
    assert gold_of({"ground_truth": "7"}, {"solution": "3 + 4 = 7"}, "solution", 0) == "3 + 4 = 7"
    with pytest.raises(TandemError, match="row 5 has no extra_info.solution; .* set partner_reward.target=answer"):
        gold_of({"ground_truth": "7"}, {"split": "train"}, "solution", 5)


def test_a_target_row_keeps_the_samples_settings_and_replaces_its_tokens():
    sample = {"prompts": torch.tensor([1, 2, 3]), "responses": torch.tensor([4, 5]),
              "position_ids": torch.arange(5), "authorship_mask": torch.tensor([1, 0]),
              "old_log_probs": torch.tensor([-0.1, -0.2]), "uid": "u0", "reward_model": {"ground_truth": "9"}}
    row = target_row(sample, context=[1, 2, 3, 4, 7], target=[8, 9])
    assert row["uid"] == "u0" and row["reward_model"] == {"ground_truth": "9"}
    assert row["prompts"].tolist() == [1, 2, 3, 4, 7] and row["responses"].tolist() == [8, 9]
    assert row["input_ids"].tolist() == [1, 2, 3, 4, 7, 8, 9] and row["position_ids"].tolist() == list(range(7))
    assert row["response_mask"].tolist() == [1, 1] and row["loss_mask"].tolist() == [1, 1]
    assert "authorship_mask" not in row and "old_log_probs" not in row  # response-shaped: dropped


def test_nested_rows_come_out_one_per_sample_and_pad_right_with_zeros():
    nested = torch.nested.as_nested_tensor([torch.tensor([1.0, 2.0]), torch.tensor([3.0])], layout=torch.jagged)
    rows = as_list(nested)
    assert [r.tolist() for r in rows] == [[1.0, 2.0], [3.0]]
    assert padded(rows).tolist() == [[1.0, 2.0], [3.0, 0.0]]
    assert as_list(["a", "b"]) == ["a", "b"]


class _Batch(SimpleNamespace):  # the fields of verl's KVBatchMeta the scorer reads
    def __len__(self) -> int:
        return len(self.keys)


def test_the_scorers_context_is_read_from_its_config_and_an_overlong_row_is_refused_before_any_pass(tiny_dir,
                                                                                                   monkeypatch):
    """Never truncated (SPEC §13): verl's reference forward would run past the context without a word."""
    tokenizer, limit = load_tokenizer(tiny_dir), scorer_context(str(tiny_dir))
    assert limit == 1024  # the zoo's max_position_embeddings
    long_response = torch.tensor(tokenizer("1 + 1 = 2. " * 200, add_special_tokens=False)["input_ids"])
    fields = {"prompts": [torch.tensor([1, 2, 3])], "responses": [long_response], "reward_model": [{"ground_truth": "2"}]}
    fields.update({k: [torch.zeros(len(long_response))] for k in ("response_mask", "authorship_mask", "old_log_probs",
                                                                  "ref_log_prob", "rm_scores")})
    fake_tq = SimpleNamespace(kv_batch_get=lambda keys, partition_id, select_fields=None: fields)
    monkeypatch.setitem(sys.modules, "transfer_queue", fake_tq)
    batch = _Batch(keys=["k0"], partition_id="train", tags=[{}])
    scorer = PartnerScorer(PartnerRewardConfig(weight=0.1, target="answer"), tokenizer, 1.0, context=limit)
    scorer._target_logprobs = lambda *a: pytest.fail("the reference pass ran on an overlong row")
    with pytest.raises(TandemError, match=r"partner score: row 0 needs \d+ tokens .* the scorer's context holds 1024"):
        scorer.apply(SimpleNamespace(), batch, {})
