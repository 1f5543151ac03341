"""Prefix transfer: the junior finishes the senior's own solo response cut at a fraction of its tokens.

The transfer-utility measure of a handoff. For each of the senior's solo responses and
each fraction f (default 0.3, 0.5, 0.7), the response is cut after floor(f * its length)
tokens, or earlier, before the start of the number that holds the gold answer's first
appearance (`tandem.rewards.transfer_cut`, the rule the transfer reward uses too), so the junior is
shown neither the answer nor its leading digits. The junior then writes the rest from the
prompt plus that prefix, under what is left of the prompt's response budget (the handoff's
shared budget); the prefix and the continuation together
are graded. A response whose gold is undetermined (`tandem_eval.core.leak.gold_key`) is not
continued: it is counted, never guessed. pass@k per fraction is the unbiased estimator
over each problem's continued samples (`tandem_eval.core.leak.pass_at_k_over_clean`).

`eval-handoff --prefix-fractions 0.3 0.5 0.7` runs it after the handoff, on the senior's
solo responses read from `--prefix-solo-dir` (an `eval-solo` output of the same senior,
prompts and sampling) or generated with the requests `eval-solo` would make. It writes,
per benchmark, `<benchmark>.prefix.jsonl` (a `SampleRow` per continued sample and
fraction, with `fraction` and `cut_tokens`; the authorship mask marks the prefix as the
senior's) and `<benchmark>.prefix.summary.json` (per fraction, also `from_correct_solo`:
pass@k over the prefixes of the senior's correct solo responses only); a benchmark whose
summary holds this run's config is skipped.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from tandem.errors import TandemError
from tandem.io.jsonl import write_json, write_jsonl
from tandem.metrics import ks_for
# the leak-free cut lives once, in the core (the transfer reward cuts the same way); re-exported here
from tandem.rewards.transfer_cut import answer_cut, cut_point  # noqa: F401
from tandem.grading import grader
from tandem_eval.core import leak
from tandem_eval.core.rows import SampleRow
from tandem_eval.core.sampling import record

DEFAULT_FRACTIONS = (0.3, 0.5, 0.7)


def check_fractions(values) -> tuple[float, ...]:
    """The fractions sorted and deduplicated; one line for a value outside (0, 1)."""
    out = []
    for v in values:
        try:
            f = float(v)
        except (TypeError, ValueError):
            f = float("nan")
        if not 0.0 < f < 1.0:  # also refuses nan
            raise TandemError(f"--prefix-fractions: {v} is outside (0, 1); give fractions of the senior's response "
                              "such as 0.3 0.5 0.7")
        out.append(f)
    return tuple(sorted(set(out)))


def fraction_label(fraction: float) -> str:
    return f"{fraction:g}"


@dataclass(frozen=True)
class Prefix:
    """One solo response to cut and continue."""

    prompt_ids: list[int]
    response_ids: list[int]
    gold: str
    budget: int  # the prompt's response budget, shared by the prefix and the continuation
    key: int  # the continuation's request key


@dataclass(frozen=True)
class Continued:
    cut: int
    token_ids: list[int]  # prefix + continuation
    authorship_mask: list[int]  # 1 = the senior's prefix
    text: str
    finish_reason: str


def finish_prefixes(junior, tokenizer, prefixes: list[Prefix], fraction: float, sampling,
                    batch_size: int | None = None) -> list[Continued | None]:
    """The junior (a `RolloutBackend`) continues each cut response; None where the gold is undetermined."""
    cuts = [cut_point(p.response_ids, p.gold, fraction, tokenizer) for p in prefixes]
    todo = [i for i, c in enumerate(cuts) if c is not None]
    out: list[Continued | None] = [None] * len(prefixes)
    groups: dict[int, list[int]] = {}
    for i in todo:  # one call per remaining budget
        groups.setdefault(max(1, prefixes[i].budget - cuts[i]), []).append(i)
    for cap, rows in sorted(groups.items()):
        turn = replace(sampling, max_new_tokens=cap)
        size = batch_size or len(rows)
        for start in range(0, len(rows), size):
            chunk = rows[start : start + size]
            got = junior.generate([prefixes[i].prompt_ids + prefixes[i].response_ids[: cuts[i]] for i in chunk], turn,
                                  [prefixes[i].key for i in chunk], solo=True)
            for i, r in zip(chunk, got):
                head = prefixes[i].response_ids[: cuts[i]]
                ids = head + list(r.token_ids)
                out[i] = Continued(cuts[i], ids, [1] * len(head) + [0] * len(r.token_ids),
                                   tokenizer.decode(ids, skip_special_tokens=True), r.finish_reason)
    return out


def graded_row(solo: SampleRow, done: Continued, tokenizer) -> SampleRow:
    """The continued sample as a graded `SampleRow` (leak fields included)."""
    answer = grader.extract_answer(done.text)
    handoffs = int(0 < done.cut < len(done.token_ids))
    row = SampleRow(solo.problem_id, solo.benchmark, solo.source, solo.sample, solo.gold, answer,
                    grader.is_equivalent(answer, solo.gold), done.finish_reason, len(done.token_ids), done.text,
                    done.token_ids, solo.prompt_ids, False, done.authorship_mask, handoffs,
                    done.cut / max(1, len(done.token_ids)))
    return row.mark_leaks(tokenizer)


def per_problem_counts(problem_ids: list[str], rows: list[SampleRow]) -> list[dict]:
    """{"id", "n", "c"} per problem, in `problem_ids`' order: continued samples and correct ones."""
    per = {pid: {"id": pid, "n": 0, "c": 0} for pid in problem_ids}
    for r in rows:
        per[r.problem_id]["n"] += 1
        per[r.problem_id]["c"] += int(r.correct)
    return list(per.values())


def summarize_fraction(problem_ids: list[str], solo: list[SampleRow], rows: list[SampleRow], ks: list[int],
                       solo_correct: list[bool] | None = None) -> dict:
    """pass@k over the continued samples (each problem's own n), with the samples not continued counted.

    `solo_correct` (one flag per row of `rows`: the solo response it was cut from was right)
    adds `from_correct_solo`: the same over prefixes of correct solo responses only, so the
    senior's own errors do not count against the junior's reading of its steps.
    """
    per = per_problem_counts(problem_ids, rows)
    out = {"pass_at_k": leak.pass_at_k_over_clean([(p["n"], p["c"]) for p in per], ks), "continued": len(rows),
           "undetermined": len(solo) - len(rows), "per_problem": per,
           "mean_prefix_fraction": sum(r.senior_token_fraction for r in rows) / len(rows) if rows else None,
           **leak.rates(rows)}
    if solo_correct is not None:
        kept = [r for r, ok in zip(rows, solo_correct) if ok]
        per_kept = per_problem_counts(problem_ids, kept)
        out["from_correct_solo"] = {"pass_at_k": leak.pass_at_k_over_clean([(p["n"], p["c"]) for p in per_kept], ks),
                                    "continued": len(kept), "per_problem": per_kept}
    return out


def read_solo_rows(directory: Path, stem: str, problem_ids: list[str], n: int) -> list[SampleRow]:
    """An `eval-solo` output's rows for these problems, in (problem, sample) order; one line if they do not fit."""
    path = directory / f"{stem}.samples.jsonl"
    if not path.is_file():
        raise TandemError(f"--prefix-solo-dir: {path} not found; run eval-solo with the same flags first, or leave "
                          "--prefix-solo-dir out to generate the senior's responses")
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = SampleRow.from_json(json.loads(line))
            rows[(r.problem_id, r.sample)] = r
    missing = [(pid, s) for pid in problem_ids for s in range(n) if (pid, s) not in rows]
    if missing:
        raise TandemError(f"--prefix-solo-dir: {path} has no sample {missing[0][1]} of problem {missing[0][0]!r}; "
                          "evaluate the senior with the same --n, benchmarks and --max-problems")
    return [rows[(pid, s)] for pid in problem_ids for s in range(n)]


def print_table(summaries: dict[str, dict]) -> None:
    """pass@1 per benchmark and fraction, with the samples continued and undetermined, and pass@1 over the
    prefixes of correct solo responses only."""
    def shown(p1) -> str:
        return "—" if p1 is None else f"{p1:.4f}"

    for name, summary in summaries.items():
        for label, f in summary["fractions"].items():
            right = f.get("from_correct_solo")  # absent in summaries written before issue 44
            tail = "" if right is None else (f"  from correct solo pass@1 {shown(right['pass_at_k']['pass@1'])} "
                                             f"continued {right['continued']}")
            print(f"{name.ljust(24)} prefix {label:<5} pass@1 {shown(f['pass_at_k']['pass@1'])}  continued "
                  f"{f['continued']}  undetermined {f['undetermined']}{tail}", file=sys.stdout)


def run_prefix_transfer(run, models: dict, fractions: tuple[float, ...], backend, solo_dir: Path | None) -> dict:
    """Every benchmark of `run` (an `EvalRun`) with `backend`, the run's `EvalBackend` (its models load only for a
    benchmark not done yet). {benchmark: summary}."""
    from tandem.process.coins import request_key
    from tandem_eval.core import runner
    from tandem_eval.core.presets import response_budget
    from tandem_eval.core.prompts import chat_prompt_ids
    from tandem_eval.core.resume import file_stem, problems_digest

    out: dict[str, dict] = {}
    for name, problems in runner.load_run_benchmarks(run).items():
        stem = file_stem(name)
        summary_path = run.out_dir / f"{stem}.prefix.summary.json"
        config = {"phase": "prefix", "preset": run.preset.name, **models, "n": run.n,
                  "sampling": record(run.sampling), "benchmark": name, "problems_sha256":
                  problems_digest(problems), "fractions": list(fractions),
                  "solo_samples": None if solo_dir is None else str(solo_dir)}
        stored = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.is_file() else {}
        if stored.get("config") == config:
            print(f"{name}: prefix transfer already done with this config, skipped", file=sys.stderr)
            out[name] = stored
            continue
        ids = [p.id for p in problems]
        if not backend.same_vocab:
            raise TandemError("--prefix-fractions needs a senior and a junior with one vocabulary (the prefix is "
                              "handed over as tokens); leave --prefix-fractions out with --allow-vocab-mismatch")
        if solo_dir is not None:
            solo = read_solo_rows(solo_dir, stem, ids, run.n)
        else:
            samples, prompts, cuts = runner._generate(backend, problems, run.n, name, False, run.preset, run)
            solo = runner._grade_rows(problems, samples, prompts, cuts, run.n, name, False, backend.tokenizer)
        expected = [chat_prompt_ids(backend.tokenizer, p.problem, run.instruction, run.preset.instruction_separator)
                    for p in problems]
        if any(r.prompt_ids != expected[i // run.n] for i, r in enumerate(solo)):
            raise TandemError(f"--prefix-solo-dir {solo_dir}: its prompts differ from this run's (another tokenizer, "
                              "instruction or preset); evaluate the senior with the same flags")
        sampling = backend.sampling
        summary = {"config": config, "benchmark": name, "fractions": {}}
        all_rows = []
        for f in fractions:
            prefixes = [Prefix(r.prompt_ids, r.response_ids, r.gold,
                               response_budget(run.preset, run.sampling.max_new_tokens, len(r.prompt_ids)),
                               request_key(f"{name}/{r.problem_id}/prefix-{fraction_label(f)}", r.sample))
                        for r in solo]
            done = finish_prefixes(backend.backend("junior"), backend.tokenizer, prefixes, f, sampling,
                                   backend.batch_size)
            pairs = [(s, graded_row(s, d, backend.tokenizer)) for s, d in zip(solo, done) if d is not None]
            rows = [r for _, r in pairs]
            all_rows += [{"fraction": f, "cut_tokens": r.authorship_mask.count(1), **r.to_json()} for r in rows]
            summary["fractions"][fraction_label(f)] = summarize_fraction(ids, solo, rows, ks_for(run.n),
                                                                         [bool(s.correct) for s, _ in pairs])
        write_jsonl(run.out_dir / f"{stem}.prefix.jsonl", all_rows)
        write_json(summary_path, summary)
        out[name] = summary
    return out
