"""The pure metrics the trainer and the eval suite share: pass@k, token drift, junior cross-entropy.

pass@k is the unbiased estimator of Chen et al. (2021) with its averages over benchmarks.
For one problem with n samples of which c are correct,
    pass@k = 1 - C(n-c, k) / C(n, k) = 1 - prod_{i=n-c+1}^{n} (1 - k / i),
the probability that a random k-subset of the n samples holds at least one correct one.
The product form never builds the huge binomials. A benchmark's pass@k is the mean over
its problems; across benchmarks, `macro` is the mean of the benchmark means and `micro`
the mean over all problems pooled.

Drift is the Jensen-Shannon divergence, base 2 (bits, in [0, 1]), between two unigram
token count tables. Junior cross-entropy is the teacher-forced negative log-likelihood of
each response under a causal LM, in nats (model_spec/SPEC.md §11 gives both in prose;
`tandem_eval.analysis.legibility` reads them off eval files).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tqdm.auto import tqdm

from tandem.errors import TandemError


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k for c correct out of n samples. Raises ValueError unless 0 <= c <= n, 1 <= k <= n."""
    for name, value in (("n", n), ("c", c), ("k", k)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"pass_at_k: {name} must be an int, got {value!r}")
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"pass_at_k: need n >= 1 and 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"pass_at_k: k={k} is outside 1..n={n}; draw at least k samples per problem")
    if n - c < k:
        return 1.0
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def ks_for(n: int) -> list[int]:
    """The k values reported for n samples: 1, 2, 4, ... up to n."""
    ks, k = [], 1
    while k <= n:
        ks.append(k)
        k *= 2
    return ks


def benchmark_pass_at_k(counts: Sequence[tuple[int, int]], ks: Iterable[int]) -> dict[str, float]:
    """Mean pass@k over problems, each given as (n, c)."""
    if not counts:
        raise ValueError("benchmark_pass_at_k: no problems")
    return {f"pass@{k}": sum(pass_at_k(n, c, k) for n, c in counts) / len(counts) for k in ks}


def summarize(counts_by_benchmark: Mapping[str, Sequence[tuple[int, int]]], ks: Iterable[int]) -> dict:
    """Per-benchmark pass@k plus macro (mean of benchmarks) and micro (all problems pooled) averages."""
    ks = list(ks)
    per = {name: benchmark_pass_at_k(counts, ks) for name, counts in counts_by_benchmark.items()}
    pooled = [nc for counts in counts_by_benchmark.values() for nc in counts]
    out: dict = {"benchmarks": per}
    if per:
        out["macro"] = {key: sum(v[key] for v in per.values()) / len(per) for key in next(iter(per.values()))}
        out["micro"] = benchmark_pass_at_k(pooled, ks)
    return out


@dataclass
class ScoredResponse:
    nll_sum: float  # nats
    n_tokens: int


def junior_cross_entropy(model, pairs: list[tuple[list[int], list[int]]], batch_size: int = 8,
                         progress: bool = True) -> list[ScoredResponse | None]:
    """Teacher-forced NLL of each response given its prompt under `model`; None where it does not fit."""
    import torch

    device = next(model.parameters()).device
    limit = int(getattr(model.config, "max_position_embeddings", 1 << 30))
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
    out: list[ScoredResponse | None] = [None] * len(pairs)
    todo = [i for i in order if pairs[i][1] and len(pairs[i][0]) + len(pairs[i][1]) <= limit]
    bar = tqdm(total=len(todo), desc="legibility", unit="response", disable=not progress)
    for start in range(0, len(todo), batch_size):
        batch = todo[start : start + batch_size]
        seqs = [pairs[i][0] + pairs[i][1] for i in batch]
        width = max(len(s) for s in seqs)
        ids = torch.zeros(len(seqs), width, dtype=torch.long)
        mask = torch.zeros(len(seqs), width, dtype=torch.long)
        for r, s in enumerate(seqs):
            ids[r, : len(s)] = torch.tensor(s)
            mask[r, : len(s)] = 1
        with torch.no_grad():
            logits = model(input_ids=ids.to(device), attention_mask=mask.to(device)).logits.float()
        logp = torch.log_softmax(logits[:, :-1], dim=-1).gather(-1, ids[:, 1:].to(device).unsqueeze(-1)).squeeze(-1)
        for r, i in enumerate(batch):
            p, n = len(pairs[i][0]), len(pairs[i][1])
            out[i] = ScoredResponse(-float(logp[r, p - 1 : p - 1 + n].sum()), n)  # position t predicts token t+1
        bar.update(len(batch))
    bar.close()
    return out


def unigram_counts(responses, exclude_ids=()) -> Counter:
    exclude = set(exclude_ids)
    counts: Counter = Counter()
    for ids in responses:
        counts.update(t for t in ids if t not in exclude)
    return counts


def js_divergence(p_counts: Counter, q_counts: Counter) -> float:
    """Jensen-Shannon divergence in bits between two count tables (0 log 0 = 0)."""
    p_total, q_total = sum(p_counts.values()), sum(q_counts.values())
    if p_total == 0 or q_total == 0:
        raise TandemError("drift needs at least one counted token on each side")
    js = 0.0
    for t in set(p_counts) | set(q_counts):
        p, q = p_counts.get(t, 0) / p_total, q_counts.get(t, 0) / q_total
        m = (p + q) / 2
        js += (p * math.log2(p / m) if p else 0.0) / 2 + (q * math.log2(q / m) if q else 0.0) / 2
    return max(0.0, js)


def top_shifts(p_counts: Counter, q_counts: Counter, k: int = 20, tokenizer=None) -> list[dict]:
    """The k tokens with the largest |p - q| (p = senior frequency, q = junior frequency)."""
    p_total, q_total = sum(p_counts.values()) or 1, sum(q_counts.values()) or 1
    rows = [(t, p_counts.get(t, 0) / p_total, q_counts.get(t, 0) / q_total) for t in set(p_counts) | set(q_counts)]
    rows.sort(key=lambda r: (-abs(r[1] - r[2]), r[0]))
    return [{"token_id": t, "token": tokenizer.decode([t]) if tokenizer is not None else None,
             "senior_freq": p, "junior_freq": q, "shift": p - q} for t, p, q in rows[:k]]
