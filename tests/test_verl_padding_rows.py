"""verl's padding samples on the tandem path (`tandem_verl.padding_rows`).

verl 0.9.1 pads a batch to its required multiple with copies of sample 0 whose response is
one token, but whose `authorship_mask` keeps sample 0's length. Here verl's own
`upsample_batch_to_divisible_size` pads a batch held in a dict-backed TransferQueue; the
senior gate refuses the padded batch until the padding samples get their own masks, and then
gates exactly what it gated before: padding samples train nothing.
"""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("verl", reason="verl 0.9.1 is not installed")

from verl.trainer.ppo import padding_utils  # noqa: E402
from verl.utils.tensordict_utils import list_of_dict_to_tensordict  # noqa: E402
from verl.utils.transferqueue_utils import KVBatchMeta  # noqa: E402

from tandem.errors import TandemError  # noqa: E402
from tandem_verl.padding_rows import clear_padding_authorship  # noqa: E402
from tandem_verl.gate import apply_senior_gate  # noqa: E402

AUTHORSHIP = [[1, 0, 0, 1], [0, 0], [1, 1, 0, 1, 0]]
GATED = ["response_mask", "authorship_mask", "loss_mask"]


class DictTransferQueue:
    """The two calls verl's padding and ours make, over a dict of samples."""

    def __init__(self) -> None:
        self.samples: dict[str, dict] = {}

    def kv_batch_get(self, keys, partition_id, select_fields=None):
        return list_of_dict_to_tensordict([{f: v for f, v in self.samples[k].items()
                                            if select_fields is None or f in select_fields} for k in keys])

    def kv_batch_put(self, keys, partition_id, fields=None, tags=None):
        for i, key in enumerate(keys):
            row = fields[i]
            self.samples.setdefault(key, {}).update({f: row[f] for f in row.keys()})


def sample(uid: str, authorship: list[int]) -> dict:
    n = len(authorship)
    prompts, responses = torch.tensor([5, 6]), torch.full((n,), 7)
    return {"uid": uid, "prompts": prompts, "responses": responses, "input_ids": torch.cat([prompts, responses]),
            "attention_mask": torch.ones(2 + n, dtype=torch.int64), "position_ids": torch.arange(2 + n),
            "response_mask": torch.ones(n, dtype=torch.int64), "loss_mask": torch.ones(n, dtype=torch.int64),
            "authorship_mask": torch.tensor(authorship), "rm_scores": torch.zeros(n),
            "rollout_log_probs": torch.zeros(n)}


@pytest.fixture
def padded(monkeypatch):
    tq = DictTransferQueue()
    monkeypatch.setattr(padding_utils, "tq", tq)
    keys = [f"s{i}" for i in range(len(AUTHORSHIP))]
    tq.kv_batch_put(keys, "train", list_of_dict_to_tensordict([sample(k, a) for k, a in zip(keys, AUTHORSHIP)]))
    batch = KVBatchMeta(keys=keys, tags=[{"seq_len": 2 + len(a)} for a in AUTHORSHIP], partition_id="train",
                        fields=list(sample("x", [1])))
    return tq, padding_utils.upsample_batch_to_divisible_size(batch, 4, eos_token_id=0)  # verl's own padding


def test_verls_padding_sample_keeps_sample_0s_mask_and_the_gate_refuses_it(padded):
    tq, batch = padded
    assert len(batch) == 4 and batch.tags[-1]["is_padding"]
    with pytest.raises(TandemError, match="authorship_mask and response_mask have different per-response lengths"):
        apply_senior_gate(tq.kv_batch_get(batch.keys, "train", GATED), 0.0, "senior_tokens")


def test_a_padding_sample_gets_an_empty_mask_of_its_own_length_and_trains_nothing(padded):
    tq, batch = padded
    assert clear_padding_authorship(batch, tq) == 1
    data = tq.kv_batch_get(batch.keys, "train", GATED)
    counts = apply_senior_gate(data, 0.0, "senior_tokens")
    gate = [row.tolist() for row in data["response_mask"].unbind(0)]
    assert gate == [*AUTHORSHIP, [0]]  # the real samples gated as before; the padding sample: nothing
    assert counts.senior_tokens == sum(map(sum, AUTHORSHIP))
    real = KVBatchMeta(keys=batch.keys[:3], tags=batch.tags[:3], partition_id="train", fields=batch.fields)
    assert clear_padding_authorship(real, tq) == 0
