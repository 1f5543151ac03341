"""Evaluation of a senior with the eval suite (`tandem_eval`): solo, handoff, pass@k, drift.

- solo: the senior alone writes the response.
- handoff: the eval suite's step handoff on the reference engine — senior and junior
  alternate at every reasoning step (a blank line), the senior first
  (`TandemConfig(selection_strategy="step", first_author="senior")`).
- pass@k: `tandem.metrics.pass_at_k` (unbiased) over n samples per problem.
- drift: `tandem.metrics.js_divergence` (bits) between the unigram token
  distributions of the senior's and the base's solo responses (special tokens excluded).
- legibility: the junior's mean cross-entropy (nats/token) on the senior's solo responses.
- notation: the share of solo steps written in the task's terse notation (`task.terse_share`).
- transfer (`evaluate_transfer`): the handoff over the samples whose answer the senior had not
  shown before the junior's last turn, and the junior finishing the senior's solo responses
  cut at fractions of their tokens, before the answer (`tandem_eval.core.leak`, `prefix_transfer`).

`greedy_solo_accuracy` is the in-memory validation the trainer runs every few steps.
"""

from __future__ import annotations

import torch

from tandem.process.coins import request_key
from tandem.grading import reward
from tandem.rollout.contract import stats_of_masks
from tandem.rollout.sampling import SamplingConfig
from tandem_app.task import Problem, terse_share
from tandem_app.train.data import prompt_ids_batch
from tandem_app.train.eval_config import EvalConfig  # noqa: F401  (the settings, re-exported)
from tandem_backends.registry import build_backend
from tandem_eval.core.backends import EvalBackend
from tandem_backends.settings import EngineSettings


def engine_settings(senior_path, junior_path, cfg: EvalConfig) -> EngineSettings:
    """The reference engine over the senior and the junior, in float32, `cfg.batch_size` rows per call."""
    return EngineSettings(senior_path, junior_path, dtype="float32", batch_size=cfg.batch_size)


def _grouped(samples: list, n: int) -> list[list]:
    return [samples[i : i + n] for i in range(0, len(samples), n)]


def correct_counts(groups: list[list], problems: list[Problem]) -> list[int]:
    return [int(sum(reward(s.text, p.answer) for s in g)) for g, p in zip(groups, problems)]


def _summary(prefix: str, groups: list[list], problems: list[Problem], n: int) -> dict:
    from tandem.metrics import pass_at_k

    counts = correct_counts(groups, problems)
    out = {f"{prefix}_acc": sum(counts) / (n * len(problems)), f"{prefix}_counts": counts, f"{prefix}_n": n}
    for k in sorted({1, n}):
        out[f"{prefix}_pass@{k}"] = sum(pass_at_k(n, c, k) for c in counts) / len(problems)
    out[f"{prefix}_response_len"] = sum(len(s.token_ids) for g in groups for s in g) / (n * len(problems))
    return out


def evaluate_senior(
    senior_path, junior_path, problems: list[Problem], cfg: EvalConfig, tag: str = "eval", handoff: bool = True,
    progress: bool = True,
) -> dict:
    """Solo and (unless `handoff=False`) handoff accuracy of a senior, with the junior as partner.

    Per-problem correct counts are kept (`solo_counts`, `handoff_counts`) for paired
    comparisons; the solo samples' token ids (`solo_tokens`) feed drift and legibility;
    `examples` holds the first `cfg.n_examples` problems' first solo and handoff responses,
    the handoff one as (author, text) runs.
    """
    backend = EvalBackend(engine_settings(senior_path, junior_path, cfg), cfg.sampling, progress=progress)
    prompts = prompt_ids_batch(backend.tokenizer, problems)
    n = cfg.n_samples
    rows = [(i, j) for i in range(len(problems)) for j in range(n)]
    row_prompts = [prompts[i] for i, _ in rows]
    keys = [request_key(f"{tag}/{problems[i].id}", j) for i, j in rows]
    with torch.no_grad():
        solo = _grouped(backend.solo(row_prompts, keys), n)
        together = _grouped(backend.handoff(row_prompts, keys), n) if handoff else None
    out = {
        **_summary("solo", solo, problems, n),
        "solo_terse_share": terse_share([s.text for g in solo for s in g]),
        "solo_tokens": [[s.token_ids for s in g] for g in solo],
    }
    examples = [{"problem": p.prompt, "answer": p.answer, "solo": g[0].text} for p, g in zip(problems, solo)]
    if together is not None:
        out.update(_summary("handoff", together, problems, n))
        out.update(stats_of_masks([s.authorship_mask for g in together for s in g]).metrics(prefix="handoff_"))
        for ex, g in zip(examples, together):
            ex["handoff"] = authored_runs(backend.tokenizer, g[0].token_ids, g[0].authorship_mask)
    out["examples"] = examples[: cfg.n_examples]
    return out


def _leak_fields(samples: list, golds: list[str], tokenizer, handoff: bool) -> list[dict]:
    from tandem_eval.core import leak

    return [{"visible": leak.answer_visible(s.token_ids, s.authorship_mask if handoff else None, g, tokenizer),
             "author": leak.final_author(s.token_ids, s.authorship_mask if handoff else None, tokenizer),
             "hit_budget": leak.hit_budget(s.finish_reason)} for s, g in zip(samples, golds)]


def _rates(fields: list[dict]) -> dict:
    from tandem_eval.core import leak

    count = {v: sum(f["visible"] == v for f in fields) for v in leak.VISIBILITY}
    determined = count[leak.VISIBLE] + count[leak.NOT_VISIBLE]
    return {"visible_rate": count[leak.VISIBLE] / determined if determined else None,
            "undetermined_rate": count[leak.UNDETERMINED] / len(fields),
            "hit_budget_rate": sum(f["hit_budget"] for f in fields) / len(fields),
            "junior_final_rate": sum(f["author"] == "junior" for f in fields) / len(fields)}


def evaluate_transfer(senior_path, junior_path, problems: list[Problem], cfg: EvalConfig, fractions,
                      tag: str = "eval") -> dict:
    """How much of a senior's handoff score is the junior's (`tandem_eval.core.leak`, `tandem_eval.analysis.prefix_transfer`).

    The solo and handoff samples are `evaluate_senior`'s (the same requests). Per problem:
    the handoff's correct count over the samples whose answer the senior had not shown
    before the junior's last turn (`handoff_clean`: [n, c]), and for each prefix fraction
    the junior's correct count finishing the senior's solo responses cut there
    (`prefix_<f>`: [n, c]; a sample with an undetermined gold is not continued), and the same
    over the prefixes of correct solo responses only (`counts_correct_solo`: the senior's own
    errors left out). With the rates of visible answers, undetermined golds, spent budgets and
    junior-written answers.
    """
    from tandem_eval.analysis import prefix_transfer
    from tandem_eval.core import leak

    backend = EvalBackend(engine_settings(senior_path, junior_path, cfg), cfg.sampling)
    tok, n = backend.tokenizer, cfg.n_samples
    prompts = prompt_ids_batch(tok, problems)
    rows = [(i, j) for i in range(len(problems)) for j in range(n)]
    golds = [problems[i].answer for i, _ in rows]
    keys = [request_key(f"{tag}/{problems[i].id}", j) for i, j in rows]
    with torch.no_grad():
        solo = backend.solo([prompts[i] for i, _ in rows], keys)
        together = backend.handoff([prompts[i] for i, _ in rows], keys)
    solo_fields, handoff_fields = _leak_fields(solo, golds, tok, False), _leak_fields(together, golds, tok, True)
    correct = [reward(s.text, g) for s, g in zip(together, golds)]
    out = {"n": n, "solo_counts": correct_counts(_grouped(solo, n), problems),
           "handoff_counts": [int(sum(g)) for g in _grouped(correct, n)],
           "handoff_clean": [[sum(f["visible"] == leak.NOT_VISIBLE for f in fs),
                              int(sum(c for f, c in zip(fs, cs) if f["visible"] == leak.NOT_VISIBLE))]
                             for fs, cs in zip(_grouped(handoff_fields, n), _grouped(correct, n))],
           "solo_rates": _rates(solo_fields), "handoff_rates": _rates(handoff_fields), "prefix": {}}
    budget = cfg.sampling.max_new_tokens
    solo_correct = [bool(reward(s.text, g)) for s, g in zip(solo, golds)]
    for f in fractions:
        prefixes = [prefix_transfer.Prefix(prompts[i], s.token_ids, g, budget,
                                           request_key(f"{tag}/{problems[i].id}/prefix-{f:g}", j))
                    for (i, j), s, g in zip(rows, solo, golds)]
        with torch.no_grad():
            done = prefix_transfer.finish_prefixes(backend.backend("junior"), tok, prefixes, f,
                                                   backend.sampling, cfg.batch_size)
        right = [d if d is not None and solo_right else None for d, solo_right in zip(done, solo_correct)]
        kept = [d for d in done if d is not None]
        out["prefix"][f"{f:g}"] = {"counts": _continued_counts(done, golds, n),
                                   "counts_correct_solo": _continued_counts(right, golds, n),
                                   "mean_cut_fraction": sum(d.cut / max(1, len(p.response_ids))
                                   for d, p in zip(done, prefixes) if d is not None) / max(1, len(kept)),
                                   "hit_budget_rate": sum(d.finish_reason == "length" for d in kept) / max(1, len(kept))}
    return out


def _continued_counts(done: list, golds: list[str], n: int) -> list[list[int]]:
    """Per problem [continued, correct] over the continuations that are not None."""
    return [[sum(d is not None for d in ds), int(sum(reward(d.text, g) for d, g in zip(ds, gs) if d is not None))]
            for ds, gs in zip(_grouped(done, n), _grouped(golds, n))]


def authored_runs(tokenizer, token_ids: list[int], mask: list[int]) -> list[list]:
    """A co-written response as [author, text] runs (author `senior` or `junior`), special tokens dropped."""
    runs: list[list] = []
    for token, senior in zip(token_ids, mask):
        author = "senior" if senior else "junior"
        if runs and runs[-1][0] == author:
            runs[-1][1].append(token)
        else:
            runs.append([author, [token]])
    decoded = [[a, tokenizer.decode(ids, skip_special_tokens=True)] for a, ids in runs]
    return [r for r in decoded if r[1]]


def drift_js(senior_tokens: list[list[int]], base_tokens: list[list[int]], tokenizer) -> float:
    """JS divergence (bits) of the unigram token distributions of two response sets."""
    from tandem.metrics import js_divergence, unigram_counts

    special = getattr(tokenizer, "all_special_ids", [])
    return js_divergence(unigram_counts(senior_tokens, special), unigram_counts(base_tokens, special))


def junior_legibility(junior, prompts: list[list[int]], responses: list[list[int]], batch_size: int = 64) -> float:
    """The junior's token-mean cross-entropy (nats) on the responses (lower = more legible)."""
    from tandem.metrics import junior_cross_entropy

    scored = [s for s in junior_cross_entropy(junior, list(zip(prompts, responses)), batch_size, progress=False) if s]
    return sum(s.nll_sum for s in scored) / max(1, sum(s.n_tokens for s in scored))


@torch.no_grad()
def greedy_solo_accuracy(
    model, tokenizer, problems: list[Problem], max_new_tokens: int = 128, batch_size: int = 256
) -> float:
    """Accuracy of the model alone with greedy decoding (validation during training)."""
    was_training = model.training
    model.eval()
    engine = build_backend("engine", model, tokenizer=tokenizer)
    sampling = SamplingConfig(temperature=0.0, max_new_tokens=max_new_tokens)
    prompts = prompt_ids_batch(tokenizer, problems)
    correct = 0
    for start in range(0, len(problems), batch_size):
        chunk = problems[start : start + batch_size]
        keys = [request_key(f"val/{p.id}", 0) for p in chunk]
        rollouts = engine.generate(prompts[start : start + batch_size], sampling, keys, solo=True)
        correct += sum(reward(r.text, p.answer) for r, p in zip(rollouts, chunk))
    model.train(was_training)
    return correct / len(problems)
