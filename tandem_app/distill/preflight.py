"""Bad input refused before any work: each in one line naming the problem and the fix.

- the teacher's or the student's directory missing;
- a teacher and a student of different vocabularies (unless `retokenize=true`, which
  re-tokenises the traces' text for the student);
- a model whose embedding has fewer rows than its tokenizer has ids, or (sharing one
  vocabulary) a teacher with more embedding rows than the student: the teacher can then
  write ids the student has no row for (an `IndexError` in the SFT, after the traces);
- a student whose config names no context length (`max_position_embeddings`), which the
  long-trace rule needs, or whose context cannot hold a test prompt and the eval's response budget;
- `writer_sees_solution=true` with a training problem that has no reference solution;
- an empty split.

The checks read tokenizers, configs and problem files only; no model is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass

from tandem.errors import TandemError
from tandem.rewards.solution_prompt import require_solution
from tandem_app.distill.problems import DistillProblem, load_split


@dataclass
class Inputs:
    """What the phases read, checked: the tokenizers, the student's context and both splits."""

    teacher_tokenizer: object
    student_tokenizer: object
    same_vocab: bool
    student_context: int
    train: list[DistillProblem]
    test: list[DistillProblem]


def check_vocab(teacher_tok, student_tok, retokenize: bool) -> bool:
    """Whether both share one vocabulary; a mismatch is refused unless `retokenize`."""
    from tandem.models.loading import check_same_vocab

    try:
        check_same_vocab(teacher_tok, student_tok)
    except TandemError:
        if not retokenize:
            a, b = teacher_tok.get_vocab(), student_tok.get_vocab()
            raise TandemError(f"teacher and student vocabularies differ ({len(a)} vs {len(b)} ids, "
                              f"{len(set(a.items()) ^ set(b.items()))} entries differ); the student cannot train on "
                              "the teacher's token ids: pass retokenize=true to re-tokenise the traces' text for "
                              "the student") from None
        return False
    return True


def check_embedding_rows(cfg, teacher_tok, student_tok, same_vocab: bool) -> None:
    """Each model has a row for every id of its tokenizer; sharing ids, the student has a row for every teacher id."""
    from tandem.models.loading import check_tokenizer_rows

    rows = {name: check_tokenizer_rows(getattr(cfg, name), tok, name)
            for name, tok in (("teacher", teacher_tok), ("student", student_tok))}
    if same_vocab and rows["teacher"] > rows["student"]:
        raise TandemError(f"the teacher has {rows['teacher']} embedding rows but the student {rows['student']}: the "
                          f"teacher can write ids {rows['student']}..{rows['teacher'] - 1}, which the student has no "
                          "row for; use a student with at least as many rows, or retokenize=true to re-tokenise the "
                          "traces' text")


def student_context(student: str) -> int:
    """The student's context in tokens: `max_position_embeddings` of its config."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(student)
    value = getattr(config, "max_position_embeddings", None)
    if not isinstance(value, int) or value < 1:
        raise TandemError(f"student {student}: its config names no max_position_embeddings, so traces cannot be "
                          "checked against its context; set it in config.json")
    return value


def check_solutions(problems: list[DistillProblem], data: str) -> None:
    """Every training problem has a reference solution, or one line names the first that has none."""
    for p in problems:
        require_solution(p.solution, f"{data}: problem {p.id}", setting="writer_sees_solution")


def check_eval_room(cfg, student_tok, test: list[DistillProblem], context: int) -> None:
    """The student's context holds the longest test prompt and the eval's response budget."""
    from tandem_app.distill.problems import question_prompt_ids

    longest = max(len(p) for p in question_prompt_ids(student_tok, test, cfg.task_data))
    budget = cfg.eval_sampling.max_new_tokens
    if longest + budget > context:
        raise TandemError(f"the student's context ({context} tokens) cannot hold the longest test prompt ({longest} "
                          f"tokens) and eval_sampling.max_new_tokens={budget}; lower eval_sampling.max_new_tokens")


def check_inputs(cfg) -> Inputs:
    """Every check of the module docstring, in that order; returns what the phases read."""
    from tandem.models.loading import check_model_path, load_tokenizer

    cfg.require_paths()
    for name in ("teacher", "student"):
        check_model_path(getattr(cfg, name), what=f"{name} model")
    teacher_tok, student_tok = load_tokenizer(cfg.teacher), load_tokenizer(cfg.student)
    same = check_vocab(teacher_tok, student_tok, cfg.retokenize)
    check_embedding_rows(cfg, teacher_tok, student_tok, same)
    context = student_context(cfg.student)
    train = load_split(cfg, "train", cfg.n_train_problems)
    test = load_split(cfg, "test", cfg.n_eval_problems)
    for split, problems in (("training", train), ("test", test)):
        if not problems:
            raise TandemError(f"distill: the {split} split has no problems; point data / test_data at rows")
    if cfg.writer_sees_solution:
        check_solutions(train, cfg.data)
    check_eval_room(cfg, student_tok, test, context)
    return Inputs(teacher_tok, student_tok, same, context, train, test)
