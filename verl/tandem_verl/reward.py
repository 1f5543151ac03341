"""verl's custom reward function, bridged to the project's grader.

Point verl at it with
    reward.custom_reward_function.path=pkg://tandem_verl.reward
    reward.custom_reward_function.name=compute_score
verl's reward manager calls `compute_score(data_source, solution_str, ground_truth,
extra_info)` once per response (solution_str = the decoded response). The score is the
team's (senior + junior) final answer graded by `tandem.grading.grade`: 1.0 right, 0.0 wrong.
Beside it, the reward's health: 1.0 where this call hit the grader's time bound
(`grader_timeouts`), its length cap (`grader_too_long`) or an internal error
(`grader_errors`), or where the answer was refused unread (`grader_unparsed`) or as a
hedge (`grader_hedged`). verl keeps these per response in its reward extra info: the tandem and
partner trainers log their sums each step (`health_metrics`), verl's validation reports
their means per data source (`val-aux/<source>/grader_timeouts/mean@N`), and its rollout
dumps carry them row by row.
"""

from __future__ import annotations

from tandem.errors import TandemError
from tandem.grading.gold import gold_text
from tandem.grading.grader import HEALTH_METRICS
from tandem.io.metric_log import GRADER_CALLS, batch_metrics


def compute_score(data_source: str, solution_str: str, ground_truth, extra_info: dict | None = None, **_) -> dict:
    """{'score': 1.0 | 0.0, 'acc': same, and each of `HEALTH_METRICS` ('grader_timeouts', ...): 0.0 | 1.0}.

    `acc` is what verl's validation metrics average.
    """
    try:
        from tandem.grading.grader import grade, reward_health, stats  # lazily: math-verify is heavy
    except ImportError as e:
        raise TandemError(f"the reward needs math-verify: `pip install tandem-rlvr[eval]` ({e})") from e
    if gold_text(ground_truth) is None:  # null, NaN, empty, a list: no response can equal it
        raise TandemError(f"{data_source}: ground truth {ground_truth!r} cannot be graded; "
                          "rebuild the parquet with scripts/prepare_deepscaler.py")
    before = stats(this_thread=True)
    score = 1.0 if grade(solution_str, ground_truth) else 0.0
    health = {name: value for name, value in reward_health(before).items() if name != GRADER_CALLS}
    return {"score": score, "acc": score, **health}


def health_metrics(extra_fields: list) -> dict[str, float]:
    """The step's grader calls cut short: each of `HEALTH_METRICS` summed over the samples.

    `extra_fields`: each sample's `extra_fields` as verl's TransferQueue holds it (a dict, or
    an object with `.data`), whose `reward_extra_info` holds what `compute_score` returned.
    """
    totals = dict.fromkeys(HEALTH_METRICS, 0.0)
    for fields in extra_fields:
        fields = getattr(fields, "data", fields)
        info = fields.get("reward_extra_info") or {} if isinstance(fields, dict) else {}
        for name in HEALTH_METRICS:
            totals[name] += float(info.get(name) or 0.0)
    return batch_metrics(totals)
