"""`SampleRow`: one graded sample, the row of `<benchmark>.samples.jsonl` and of the partial file.

The runner writes it, its resume reads it back, and the reports read the files. The JSON
object has exactly these fields in this order; the handoff's four fields are present on
handoff rows only.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

HANDOFF_FIELDS = ("cut_by_max_rounds", "authorship_mask", "num_handoffs", "senior_fraction")


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
    senior_fraction: float | None = None

    def to_json(self) -> dict:
        d = asdict(self)
        return {k: v for k, v in d.items() if k not in HANDOFF_FIELDS or v is not None}

    @classmethod
    def from_json(cls, d: dict) -> SampleRow:
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})
