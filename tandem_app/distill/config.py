"""`DistillConfig`: the typed settings of one distillation run, and the checks that refuse a bad one.

Every field is a config key (`--config` file or `key=value`; `tandem-rlvr distill --help`
prints `KEY_HELP`, one line per key); `device` and `threads` are `DeviceSettings`'
(`tandem_app/train/run_settings.py`), as in `sft` and `train`. The defaults are the demo's: its
task, its rollout temperature for the teacher's traces, its evaluation sampling for the student.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tandem.errors import TandemError
from tandem.rollout.sampling import SamplingConfig
from tandem_app.task import DEMO_TASK, TaskConfig
from tandem_app.train.finite import check_finite_numbers, check_lr
from tandem_app.train.run_settings import DeviceSettings, check_device_settings
from tandem_eval.core.sampling import sampling_section

BACKENDS = {"reference": "engine", "vllm": "vllm"}  # this command's name -> its entry in tandem_backends.registry
SFT_BACKENDS = ("embedded", "verl")
TOO_LONG = ("drop", "cut")
SFT_BUDGETS = ("steps", "tokens")  # what is held equal across teachers: optimizer steps, or gradient tokens
TASK = "task"


def _demo_task() -> TaskConfig:
    return DEMO_TASK  # the demo's task: the one its teachers were trained on


def _demo_eval_sampling() -> SamplingConfig:
    from tandem_app.train.eval_config import EvalConfig

    return EvalConfig().sampling


@dataclass
class _DistillTraces:
    """DistillConfig's own keys that come before the device settings (a base, so the keys keep their order)."""

    teacher: str = ""  # HF model dir that writes the traces
    student: str = ""  # HF model dir that is fine-tuned on them (required: no default base is assumed)
    out: str = ""  # run directory
    seed: int = 0
    data: str = TASK  # `task` (the toy task) or a training JSONL file (problem, answer, optional solution / id)
    test_data: str = ""  # the test JSONL file (required with a data file; `task` uses the task's test split)
    task: TaskConfig = field(default_factory=_demo_task)
    n_train_problems: int = 1000  # problems read from the training split, in order
    only_correct: bool = False  # keep only traces the grader scores correct
    token_budget: int = 0  # stop collecting once the kept traces hold this many response tokens; 0 = no cap
    writer_sees_solution: bool = False  # RLT's teacher input (question and solution) and RLT's student form
    retokenize: bool = False  # allow a student of another vocabulary: traces re-tokenised by its tokenizer
    too_long: str = "drop"  # a trace longer than the student's context: drop | cut (counted and printed either way)
    temperature: float = 1.0  # the teacher's sampling (the demo's rollout temperature)
    top_p: float = 1.0
    top_k: int = 0
    max_new_tokens: int = 128  # the teacher's response budget (the demo's evaluation room)
    backend: str = "reference"  # generation for traces and eval: reference (tandem.reference.engine) | vllm
    generation_batch_size: int = 64  # reference engine: rows per generate call


# The bases' fields come first, the last base's first: the keys read as before (`distill --help`, config.json).
@dataclass
class DistillConfig(DeviceSettings, _DistillTraces):
    """A teacher's traces -> a student's SFT -> the student's solo accuracy before and after."""

    sft_backend: str = "embedded"  # embedded (tandem_app.train.sft) | verl (verl/run_distill_sft.sh)
    sft_nproc: int = 1  # verl SFT: processes (GPUs) torchrun starts
    steps: int = 200  # the student's SFT optimizer steps (sft_budget=steps)
    sft_budget: str = "steps"  # steps: `steps` optimizer steps; tokens: as many as hold `sft_tokens` gradient tokens
    sft_tokens: int = 0  # sft_budget=tokens: the response tokens the student's loss covers, summed over steps
    batch_size: int = 32
    lr: float = 1e-3
    warmup_steps: int = 10
    min_lr_ratio: float = 0.1
    save_every: int = 50  # the student's SFT checkpoints
    n_eval_problems: int = 200  # test problems, the same before and after
    n_samples: int = 4  # sampled responses per test problem
    eval_sampling: SamplingConfig = sampling_section(_demo_eval_sampling)

    def __post_init__(self):
        for name in ("n_train_problems", "n_eval_problems", "n_samples", "steps", "batch_size", "save_every",
                     "max_new_tokens", "generation_batch_size", "sft_nproc"):
            if getattr(self, name) < 1:
                raise TandemError(f"distill: {name} must be >= 1, got {getattr(self, name)}")
        for name in ("token_budget", "warmup_steps", "top_k"):
            if getattr(self, name) < 0:
                raise TandemError(f"distill: {name} must be >= 0, got {getattr(self, name)}")
        check_finite_numbers(self, "distill")
        if not self.lr > 0 or not 0 <= self.min_lr_ratio <= 1:
            raise TandemError(f"distill: lr must be > 0 and min_lr_ratio in [0, 1], got {self.lr}, {self.min_lr_ratio}")
        check_lr(self.lr, "distill")
        check_device_settings(self, "distill")
        if self.temperature < 0 or not 0 < self.top_p <= 1:
            raise TandemError(f"distill: temperature must be >= 0 and top_p in (0, 1], got {self.temperature}, "
                              f"{self.top_p}")
        _one_of("backend", self.backend, tuple(BACKENDS))
        _one_of("sft_backend", self.sft_backend, SFT_BACKENDS)
        _one_of("too_long", self.too_long, TOO_LONG)
        _one_of("sft_budget", self.sft_budget, SFT_BUDGETS)
        self._check_sft_budget()
        if self.data != TASK and not self.test_data:
            raise TandemError(f"distill: data={self.data} is a file, so the test split needs test_data=FILE.jsonl too")

    def _check_sft_budget(self) -> None:
        if self.sft_budget == "tokens" and self.sft_tokens < 1:
            raise TandemError(f"distill: sft_budget=tokens needs sft_tokens >= 1 (the gradient tokens every "
                              f"teacher's student trains on), got {self.sft_tokens}")
        if self.sft_budget == "steps" and self.sft_tokens:
            raise TandemError(f"distill: sft_tokens={self.sft_tokens} is read only with sft_budget=tokens")
        if self.sft_budget == "tokens" and self.sft_backend != "embedded":
            raise TandemError("distill: sft_budget=tokens counts the embedded SFT's batches; use sft_backend=embedded "
                              "or sft_budget=steps")

    def require_paths(self) -> None:
        """teacher, student and out must be given (checked before any work; `--help` needs none)."""
        for name in ("teacher", "student", "out"):
            if not getattr(self, name):
                raise TandemError(f"distill needs {name}=... ({KEY_HELP[name]})")

    @property
    def task_data(self) -> bool:
        return self.data == TASK


def _one_of(name: str, value: str, choices) -> None:
    if value not in choices:
        raise TandemError(f"distill: unknown {name} {value!r}; choose one of {', '.join(choices)}")


KEY_HELP = {
    "teacher": "the teacher's HF model dir: it writes one solo trace per training problem",
    "student": "the student's HF model dir: evaluated, fine-tuned on the traces, evaluated again (required)",
    "out": "run directory: traces.jsonl, student/, eval/, summary.json (locked while a run writes)",
    "seed": "the problems' seed, the traces' and the eval's request keys, the SFT's batches",
    "data": "`task`: the toy task (tandem_app.task); or a training JSONL file with problem, answer and optional "
            "solution, id",
    "test_data": "the test JSONL file (required when data is a file)",
    "task": "the toy task's difficulty knobs (default: the demo's task)",
    "n_train_problems": "training problems read, in a fixed order (each gets one trace)",
    "only_correct": "true: keep only the traces the project's grader scores correct (default: raw traces, as RLT)",
    "token_budget": "stop collecting once the kept traces hold this many response tokens (the student's tokens), "
                    "so teachers compare at equal tokens; 0 = no cap",
    "writer_sees_solution": "true: the teacher writes with RLT's teacher input (question + solution, "
                            "tandem.rewards.solution_prompt) and the student learns RLT's student form, question -> "
                            "think(the teacher's explanation) + the reference solution",
    "retokenize": "true: a student with another vocabulary is allowed; the traces' text is re-tokenised for it",
    "too_long": "a trace longer than the student's context (max_position_embeddings): drop it or cut it; "
                "counted and printed either way",
    "temperature": "the teacher's sampling temperature (default: the demo's rollout temperature)",
    "top_p": "the teacher's top-p",
    "top_k": "the teacher's top-k (0 = off)",
    "max_new_tokens": "the teacher's response budget in tokens",
    "backend": "generation for traces and eval: reference (the reference engine, CPU or one GPU) or vllm "
               "(tandem_eval's vLLM backend, the scale path)",
    "generation_batch_size": "reference engine: rows per generate call",
    "device": "where the reference engine and the embedded SFT run (cpu, cuda)",
    "threads": "torch CPU threads (0 = auto: 1 when every model is small, else torch's default)",
    "sft_backend": "embedded: the project's SFT (tandem_app.train.sft); verl: verl 0.9.1's SFT trainer through "
                   "verl/run_distill_sft.sh",
    "sft_nproc": "verl SFT: processes (one per GPU) torchrun starts for verl's SFT trainer",
    "steps": "the student's SFT optimizer steps (with sft_budget=steps)",
    "sft_budget": "steps: every student trains `steps` steps; tokens: each trains the fewest steps whose batches "
                  "hold sft_tokens response tokens, so students of terse and verbose teachers see as many gradient "
                  "tokens (embedded SFT)",
    "sft_tokens": "with sft_budget=tokens: the gradient tokens (response tokens under the loss, over all steps)",
    "batch_size": "traces per SFT step",
    "lr": "the SFT's peak learning rate",
    "warmup_steps": "linear warm-up steps of the SFT's learning rate (embedded SFT)",
    "min_lr_ratio": "the SFT's cosine decay ends at lr * min_lr_ratio (embedded SFT)",
    "save_every": "SFT checkpoint every N steps (a rerun resumes from the last one)",
    "n_eval_problems": "test problems the student is evaluated on, the same before and after",
    "n_samples": "sampled responses per test problem; accuracy is their mean",
    "eval_sampling": "the eval's sampling: temperature, top_p, top_k, max_new_tokens, seed (default: the demo's)",
}
