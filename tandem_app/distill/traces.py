"""The teacher's traces: one sampled solo trace per training problem, in the split's order.

The teacher reads the plain question prompt, or with `writer_sees_solution` RLT's teacher
input (`tandem.rewards.solution_prompt.writer_prompt_ids`: the question and its solution). Each
trace is graded (`tandem.grading.reward`) and turned into the student's example: the plain
question prompt in the student's tokenizer, and the response as the student will train on
it (the teacher's ids, or with `retokenize` the text re-tokenised by the student's tokenizer).
With `writer_sees_solution` the student learns RLT's student form instead of the raw trace
(`student_form_ids`): the question -> the teacher's explanation (the trace before RLT's
closing explanation tag) as its reasoning between the think tags, then the problem's
reference solution. Then, in order:

1. `only_correct`: a trace the grader scores wrong is not kept;
2. a trace longer than the student's context is dropped (or cut with `too_long=cut`), counted;
3. `token_budget`: collecting stops before the first trace that would take the kept
   response tokens (the student's) past the budget, so teachers compare at equal tokens.

Generation runs in chunks of `generation_batch_size` problems and stops with the budget;
a trace's request key depends on its problem only, so the traces kept do not depend on the
chunking. `OUT/traces.jsonl` is written atomically, then `OUT/traces_meta.json` (the counts):
the phase is complete when the latter exists.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

from tandem.errors import TandemError

TRACES = "traces.jsonl"
META = "traces_meta.json"


@dataclass
class TraceCounts:
    n_problems_read: int = 0  # problems the teacher wrote a trace for
    n_correct: int = 0  # of those, graded correct
    n_traces: int = 0  # kept
    trace_tokens: int = 0  # response tokens of the kept traces (the student's tokens)
    dropped_incorrect: int = 0
    dropped_too_long: int = 0
    cut_too_long: int = 0
    budget_reached: bool = False
    student_context: int = 0

    def kept_correct(self, rows: list[dict]) -> float:
        return sum(r["correct"] for r in rows) / len(rows) if rows else 0.0

    def count_line(self) -> str:
        """Where every trace read went, adding up to `n_problems_read` (the numbers summary.json records)."""
        parts = [f"{self.n_traces} kept ({self.trace_tokens} tokens)"]
        if self.dropped_incorrect:
            parts.append(f"{self.dropped_incorrect} graded wrong, dropped")
        if self.dropped_too_long:
            parts.append(f"{self.dropped_too_long} too long, dropped")
        if self.budget_reached:
            parts.append("1 past the token budget, not kept: collection stopped there")
        cut = f"; {self.cut_too_long} of the kept cut to fit" if self.cut_too_long else ""
        return (f"traces: {self.n_problems_read} written by the teacher ({self.n_correct} correct): "
                + ", ".join(parts) + cut)

    def long_line(self) -> str:
        """The one line on traces longer than the student's context (printed whatever the count)."""
        n = self.dropped_too_long + self.cut_too_long
        if not n:
            return (f"traces: none of {self.n_problems_read} is longer than the student's context "
                    f"({self.student_context} tokens)")
        done = "dropped (too_long=cut keeps them, cut)"
        if self.cut_too_long:
            done = f"{self.cut_too_long} cut to fit"
            if self.dropped_too_long:
                done += f", {self.dropped_too_long} dropped (their prompt alone fills the context)"
        return (f"traces: {n} of {self.n_problems_read} are longer than the student's context "
                f"({self.student_context} tokens): {done}")


def teacher_prompts(cfg, inputs, problems) -> list[list[int]]:
    from tandem.rewards.solution_prompt import writer_prompt_ids
    from tandem_app.distill.problems import question_prompt_ids

    if cfg.writer_sees_solution:
        return [writer_prompt_ids(inputs.teacher_tokenizer, p.question, p.solution) for p in problems]
    return question_prompt_ids(inputs.teacher_tokenizer, problems, cfg.task_data)


def student_form(inputs, rollout, solution: str) -> str:
    """RLT's student form: think(the teacher's explanation) + the reference solution. The explanation is
    read from the teacher's ids (its closing tag is a special token, which the rollout's text leaves out)."""
    from tandem.rewards.partner_score import explanation_text
    from tandem.rewards.solution_prompt import student_completion

    explanation = explanation_text(inputs.teacher_tokenizer, list(rollout.token_ids))
    return student_completion(explanation.strip("\n"), solution)


def student_response(inputs, rollout) -> list[int]:
    """The response the student trains on: the teacher's ids, or its text in the student's tokens."""
    if inputs.same_vocab:
        return list(rollout.token_ids)
    from tandem_app.train.data import response_ids

    tok = inputs.student_tokenizer
    if rollout.finish_reason == "stop":
        return response_ids(tok, rollout.text)
    return list(tok(rollout.text, add_special_tokens=False)["input_ids"])


def generator(cfg, progress: bool = True):
    """The teacher's backend under the trace sampling (the eval's `EvalBackend`)."""
    from tandem_app.distill.evaluation import engine_settings
    from tandem_eval.core.backends import EvalBackend
    from tandem.rollout.sampling import SamplingConfig

    sampling = SamplingConfig(temperature=cfg.temperature, top_p=cfg.top_p, top_k=cfg.top_k,
                              max_new_tokens=cfg.max_new_tokens, seed=cfg.seed)
    return EvalBackend(engine_settings(cfg, cfg.teacher), sampling, progress=progress)


def collect(cfg, inputs, backend=None, progress: bool = True) -> tuple[list[dict], TraceCounts]:
    """The kept traces (rows of traces.jsonl) and the counts; see the module docstring."""
    import torch

    from tandem.process.coins import request_key
    from tandem.grading import reward
    from tandem_app.distill.problems import question_prompt_ids
    from tandem_app.train.data import response_ids

    backend = backend or generator(cfg, progress)
    tok = inputs.teacher_tokenizer
    counts, rows = TraceCounts(student_context=inputs.student_context), []
    size = cfg.generation_batch_size
    for start in range(0, len(inputs.train), size):
        chunk = inputs.train[start : start + size]
        prompts = teacher_prompts(cfg, inputs, chunk)
        keys = [request_key(f"distill-trace/{cfg.seed}/{p.id}", 0) for p in chunk]
        with torch.no_grad():
            rollouts = backend.solo(prompts, keys)
        student_prompts = question_prompt_ids(inputs.student_tokenizer, chunk, cfg.task_data)
        for p, prompt, sp, r in zip(chunk, prompts, student_prompts, rollouts):
            counts.n_problems_read += 1
            correct = bool(reward(r.text, p.answer))
            counts.n_correct += correct
            if cfg.only_correct and not correct:
                counts.dropped_incorrect += 1
                continue
            text = student_form(inputs, r, p.solution) if cfg.writer_sees_solution else r.text
            cut = False
            # RLT's student form ends in the end of turn, as SFT closes every response
            response = (response_ids(inputs.student_tokenizer, text) if cfg.writer_sees_solution
                        else student_response(inputs, r))
            room = inputs.student_context - len(sp)
            if len(response) > room:
                if cfg.too_long == "drop" or room < 1:
                    counts.dropped_too_long += 1
                    continue
                response, cut = response[:room], True
                counts.cut_too_long += 1
            if cfg.token_budget and counts.trace_tokens + len(response) > cfg.token_budget:
                counts.budget_reached = True
                return rows, counts
            counts.n_traces += 1
            counts.trace_tokens += len(response)
            rows.append({"id": p.id, "question": p.question, "prompt": tok.decode(prompt), "response": text,
                         "token_ids": list(r.token_ids), "finish_reason": r.finish_reason, "correct": correct,
                         "student_prompt_ids": list(sp), "student_response_ids": response, "cut": cut})
    return rows, counts


def nothing_left(cfg, counts: TraceCounts) -> str | None:
    """The one line for a run with no trace left after filtering (None when some are left)."""
    if counts.n_traces:
        return None
    why = []
    if cfg.only_correct:
        why.append(f"the teacher got {counts.n_correct} of {counts.n_problems_read} right (only_correct=true)")
    if counts.dropped_too_long:
        why.append(f"{counts.dropped_too_long} were longer than the student's context ({counts.student_context} "
                   "tokens; too_long=cut keeps them cut)")
    if counts.budget_reached:
        why.append(f"token_budget={cfg.token_budget} is below the first trace's length")
    return (f"distill: no traces left to fine-tune on after filtering {counts.n_problems_read} problems: "
            f"{'; '.join(why) or 'none kept'}; loosen the filter or raise n_train_problems")


def write(out: Path, rows: list[dict], counts: TraceCounts) -> None:
    from tandem.io.jsonl import write_json, write_jsonl

    write_jsonl(out / TRACES, rows)
    write_json(out / META, {**asdict(counts), "traces_correct_fraction": counts.kept_correct(rows)})


def read(out: Path) -> tuple[list[dict], dict] | None:
    """The phase's output when complete (meta written after the traces), else None."""
    import json

    from tandem.io.jsonl import read_jsonl

    if not (out / META).is_file():
        return None
    meta = json.loads((out / META).read_text())
    rows = read_jsonl(out / TRACES) if (out / TRACES).stat().st_size else []
    if len(rows) != meta["n_traces"]:
        raise TandemError(f"{out / TRACES} holds {len(rows)} traces but {out / META} counts {meta['n_traces']}; "
                          f"delete both to collect the traces again")
    return rows, meta
