"""`SampleRow`: one graded sample, the row of `<benchmark>.samples.jsonl` and of the partial file.

The runner writes it, its resume reads it back, and the reports read the files. The JSON
object has these fields in this order; the handoff's four fields are present on handoff
rows only (the senior's share, `senior_token_fraction`, under the field name users read:
`tandem.io.legacy.SENIOR_FRACTION_FIELD`). The last three (`tandem_eval.core.leak`: whether the
answer was visible before the junior's last turn, who wrote the final answer, whether the
budget was spent) are on every row written since they were added; a row read back from an
older file has them as None, and writes them out again absent.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from tandem.io.legacy import SENIOR_FRACTION_FIELD

HANDOFF_FIELDS = ("cut_by_max_rounds", "authorship_mask", "num_handoffs", "senior_token_fraction")
# the attributes whose JSON field keeps another name (users read the files)
JSON_NAMES = {"senior_token_fraction": SENIOR_FRACTION_FIELD}
LEAK_FIELDS = ("answer_visible", "final_author", "hit_budget")


@dataclass
class SampleRow:
    problem_id: str
    benchmark: str
    source: str
    sample: int  # index among the problem's n samples
    gold: str
    extracted_answer: str | None
    correct: bool
    finish_reason: str  # "stop" or "length"
    num_tokens: int
    text: str
    response_ids: list[int]
    prompt_ids: list[int]
    # the handoff's (None on solo rows, and then absent from the JSON)
    cut_by_max_rounds: bool | None = None
    authorship_mask: list[int] | None = None  # 1 = senior
    num_handoffs: int | None = None
    senior_token_fraction: float | None = None
    # tandem_eval.core.leak's (None only on rows read back from files written before them)
    answer_visible: str | None = None  # "visible", "not_visible" or "undetermined"
    final_author: str | None = None  # "senior", "junior" or "none"
    hit_budget: bool | None = None

    def to_json(self) -> dict:
        d = asdict(self)
        return {JSON_NAMES.get(k, k): v for k, v in d.items() if k not in HANDOFF_FIELDS + LEAK_FIELDS or v is not None}

    @classmethod
    def from_json(cls, d: dict) -> SampleRow:
        names, attribute = {f.name for f in fields(cls)}, {v: k for k, v in JSON_NAMES.items()}
        d = {attribute.get(k, k): v for k, v in d.items()}
        return cls(**{k: v for k, v in d.items() if k in names})

    def mark_leaks(self, tokenizer) -> SampleRow:
        """Fill the three `tandem_eval.core.leak` fields from the token ids and the authorship mask."""
        from tandem_eval.core import leak

        self.answer_visible = leak.answer_visible(self.response_ids, self.authorship_mask, self.gold, tokenizer)
        self.final_author = leak.final_author(self.response_ids, self.authorship_mask, tokenizer)
        self.hit_budget = leak.hit_budget(self.finish_reason, self.cut_by_max_rounds)
        return self
