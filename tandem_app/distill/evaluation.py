"""The student alone on the test split: per-problem correct counts, before and after its fine-tuning.

Both evaluations ask the same problems with the same request keys under the same
sampling (`eval_sampling`, the demo's by default), so before and after differ only in the
weights and the gain can be paired problem by problem (`tandem_app.distill.summary`).
Generation goes through the eval's `EvalBackend` (`tandem_eval.core.backends`) on the backend
`backend` names (`tandem_backends.registry`: the reference engine, or vLLM); grading is the
project's grader (`tandem.grading.reward`).
"""

from __future__ import annotations

from tandem_app.distill.config import BACKENDS


def engine_settings(cfg, model: str):
    """One model generating solo, on the run's backend."""
    from tandem_backends.settings import EngineSettings

    return EngineSettings(str(model), backend=BACKENDS[cfg.backend], seed=cfg.seed, device=cfg.device,
                          batch_size=cfg.generation_batch_size)


def evaluate_solo(cfg, model: str, problems, progress: bool = True) -> dict:
    """`model`'s correct count on each problem out of `n_samples`, and its accuracy."""
    import torch

    from tandem.process.coins import request_key
    from tandem.grading import reward
    from tandem_app.distill.problems import question_prompt_ids
    from tandem_eval.core.backends import EvalBackend

    backend = EvalBackend(engine_settings(cfg, model), cfg.eval_sampling, progress=progress)
    prompts = question_prompt_ids(backend.tokenizer, problems, cfg.task_data)
    n = cfg.n_samples
    rows = [(i, j) for i in range(len(problems)) for j in range(n)]
    keys = [request_key(f"distill-eval/{cfg.seed}/{problems[i].id}", j) for i, j in rows]
    with torch.no_grad():
        done = backend.solo([prompts[i] for i, _ in rows], keys)
    counts = [0] * len(problems)
    for (i, _), r in zip(rows, done):
        counts[i] += int(reward(r.text, problems[i].answer))
    return {"model": str(model), "n_samples": n, "counts": counts,
            "accuracy": sum(counts) / (n * len(problems)),
            "response_tokens": sum(len(r.token_ids) for r in done) / len(done),
            "example": {"problem": problems[0].question, "response": done[0].text}}
