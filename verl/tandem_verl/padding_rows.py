"""verl's padding samples on the tandem path: an authorship mask of their own length.

verl 0.9.1 upsamples each batch to a multiple of its data-parallel size and actor
mini-batch (`trainer_base._balance_batch` -> `padding_utils.upsample_batch_to_divisible_size`)
with no-op samples copied from sample 0. `construct_minimal_padding_template` rebuilds
verl's own fields for a one-token response but keeps every other field as sample 0 had
it, so a padding sample's `authorship_mask` keeps sample 0's length, and the senior gate
(`wiring.apply_senior_gate`) would refuse the mini-batch's layout. A padding sample trains
nothing (its `response_mask` is 0); here it gets a mask of its response's length, all 0:
no token of it is the senior's.
"""

from __future__ import annotations

import torch

from tandem_verl.partner_score import as_list

FIELD = "authorship_mask"


def clear_padding_authorship(batch, tq) -> int:
    """Give every padding sample of `batch` (a KVBatchMeta) an all-zero authorship mask of its
    response's length, in TransferQueue `tq`; returns how many samples it rewrote."""
    from verl.utils.tensordict_utils import list_of_dict_to_tensordict

    pads = [key for key, tag in zip(batch.keys, batch.tags) if tag.get("is_padding")]
    if not pads or FIELD not in (batch.fields or []):
        return 0
    rows = tq.kv_batch_get(keys=pads, partition_id=batch.partition_id, select_fields=[FIELD, "response_mask"])
    masks, responses = as_list(rows[FIELD]), as_list(rows["response_mask"])
    fields = [{FIELD: torch.zeros(r.numel(), dtype=m.dtype)} for m, r in zip(masks, responses)]
    tq.kv_batch_put(keys=pads, partition_id=batch.partition_id, fields=list_of_dict_to_tensordict(fields))
    return len(pads)
