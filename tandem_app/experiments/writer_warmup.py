"""The writer's SFT warm-up on RLT's format, before RL (RLT's `cfgs/run_cfg/teacher_sft.yaml`).

RLT fine-tunes its teacher on the format before reinforcing it: the teacher reads the
question and the reference solution (`tandem.rewards.solution_prompt.writer_prompt_ids`) and is
trained to write the explanation and close it, the loss on the explanation only (RLT masks
everything up to the opened explanation tag). RLT's explanations are a reasoning model's
traces; the toy task has one worked solution per problem and no separate reasoning, so the
warm-up's explanation is the task's own worked solution (`Problem.solution`, the verbose
notation): the warm-up teaches the format, the instruction token and the closing tag, and
that an explanation walks the solution's steps. Without it the toy base had never read a
system turn or RLT's tags (issue 44, `model_spec/RESULTS.md`).

    examples = warmup_examples(tokenizer, problems)   # (writer prompt, explanation + tag + <|im_end|>)
    run_writer_warmup(model_dir, out, seed=0, task=DEMO_TASK)  # -> OUT/model, the writer RL starts from
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError
from tandem_app.task import TaskConfig


@dataclass(frozen=True)
class WarmupConfig:
    """The warm-up's SFT: a few hundred steps of the project's SFT on the task's training problems.

    RLT's teacher SFT runs 10 epochs at lr 1e-5 on a 7B model; the toy's 4-layer model, trained
    from scratch at lr 3e-3, learns the copy and the tags at lr 1e-3 in about 200 steps
    (model_spec/RESULTS.md records the loss and what the writer writes after it).
    """

    steps: int = 200
    batch_size: int = 32
    lr: float = 1e-3
    warmup_steps: int = 10
    n_problems: int = 4000  # training problems (the task's train split, the run's seed)
    save_every: int = 50

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "n_problems", "save_every"):
            if getattr(self, name) < 1:
                raise TandemError(f"writer warm-up: {name} must be >= 1, got {getattr(self, name)}")
        if self.warmup_steps < 0 or not self.lr > 0:
            raise TandemError(f"writer warm-up: lr must be > 0 and warmup_steps >= 0, got {self.lr}, "
                              f"{self.warmup_steps}")


def warmup_examples(tokenizer, problems: list) -> list[tuple[list[int], list[int]]]:
    """(prompt ids, response ids) per problem: the writer's prompt (question + solution), then the
    explanation (the problem's worked solution), the closing explanation tag and the end of turn.
    The SFT's loss covers the response only: RLT's loss on the explanation."""
    from tandem.rewards.solution_prompt import require_solution, writer_prompt_ids, writer_warmup_response
    from tandem_app.train.data import response_ids

    examples = []
    for p in problems:
        solution = require_solution(p.solution, f"warm-up problem {p.id}")
        examples.append((writer_prompt_ids(tokenizer, p.prompt, solution),
                         response_ids(tokenizer, writer_warmup_response(solution))))
    return examples


def run_writer_warmup(model: str | Path, out: str | Path, seed: int, task: TaskConfig,
                      cfg: WarmupConfig | None = None, threads: int = 0, progress: bool = True) -> Path:
    """Warm `model` (a tokenizer built with RLT's format) up on the format in OUT; returns OUT/model.

    A finished OUT is reused, an interrupted one resumed (the project's SFT).
    """
    from tandem.models.loading import load_tokenizer
    from tandem.rewards.solution_prompt import FORMAT_TOKENS, has_format_tokens
    from tandem_app.task import generate_problems
    from tandem_app.train.sft import SFTConfig, run_sft

    cfg = cfg or WarmupConfig()
    tokenizer = load_tokenizer(model)
    if not has_format_tokens(tokenizer):
        raise TandemError(f"{model}: its tokenizer splits RLT's format tokens ({', '.join(FORMAT_TOKENS)}); warm up a "
                          "copy made with tandem_app.zoo.add_format_tokens")
    problems = generate_problems("train", cfg.n_problems, seed, task)
    sft = SFTConfig(model=str(model), out=str(out), seed=seed, steps=cfg.steps, batch_size=cfg.batch_size, lr=cfg.lr,
                    warmup_steps=cfg.warmup_steps, save_every=cfg.save_every, log_every=max(1, cfg.steps // 10),
                    threads=threads, task=task)
    summary = run_sft(sft, resume=Path(out).exists(), progress=progress, examples=warmup_examples(tokenizer, problems))
    return Path(summary["model"])
