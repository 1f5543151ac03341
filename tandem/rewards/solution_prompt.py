"""The writer who sees the solution: RLT's teacher input (`partner_reward.writer_sees_solution`).

In RLT (arXiv 2506.08388; SakanaAI/RLT) a teacher is shown a question *and* its reference
solution and asked to write the explanation that connects them; a student then scores it by
the log-probability of that solution after reading the question and the explanation
(`tandem.rewards.partner_score`, target `solution`). Here the writer (the senior, or the tandem
team) gets the question as its user turn, and its own turn starts already holding the
solution between RLT's solution tags and an opened explanation tag, so everything it writes
is the explanation. The student never sees that prompt: it reads the plain question prompt,
the explanation, then, in the same turn, the solution it is scored on.

A row without a reference solution cannot be written this way; `require_solution` refuses
it in one line, naming the row and the fix.

RLT's format at toy scale (issue 44): a tokenizer *built with the format* holds
`FORMAT_TOKENS` as single tokens (`tandem_app.zoo.add_format_tokens`), and its writer reads
RLT's instruction as the one token `INSTRUCTION_TOKEN`, which the writer's SFT warm-up teaches
(`writer_warmup_response`): the demo's tokenizer was trained on task text only, where the
instruction in words costs 152 tokens, three times the question. Any other tokenizer reads
the instruction in words, as before. The writer closes its explanation with RLT's closing
tag (`split_explanation`); the student learns RLT's student form (`student_completion`).
"""

from __future__ import annotations

from tandem.errors import TandemError

SOLUTION_TAGS = ("<|begin_of_solution|>", "<|end_of_solution|>")  # RLT's tag names (a format fact)
EXPLANATION_TAGS = ("<|begin_of_explanation|>", "<|end_of_explanation|>")
THOUGHT_TAGS = ("<|begin_of_thought|>", "<|end_of_thought|>")  # RLT's student reasons between these
INSTRUCTION_TOKEN = "<|teacher_instruction|>"  # the instruction, for a tokenizer built with the format
FORMAT_TOKENS = (*SOLUTION_TAGS, *EXPLANATION_TAGS, *THOUGHT_TAGS, INSTRUCTION_TOKEN)
SYSTEM = ("You are a teacher. You are given a question and its correct solution. Write the explanation a "
          "student needs to reach that solution on their own: the reasoning that connects the question to it, "
          "step by step.")


def require_solution(solution, where: str, setting: str = "partner_reward.writer_sees_solution") -> str:
    """`solution` as text; a missing or blank one is one error naming `where` (a row or a file:line) and `setting`."""
    if not isinstance(solution, str) or not solution.strip():
        raise TandemError(f"{where}: no reference solution, but {setting}=true shows the writer one; give every "
                          f"row a 'solution' (scripts/prepare_deepscaler.py keeps it) or set {setting}=false")
    return solution


def has_format_tokens(tokenizer) -> bool:
    """Whether `tokenizer` was built with RLT's format: every one of `FORMAT_TOKENS` is one token of it."""
    return all(len(tokenizer(t, add_special_tokens=False)["input_ids"]) == 1 for t in FORMAT_TOKENS)


def writer_messages(question: str, tokenizer=None) -> list[dict]:
    """The chat the writer reads before its own turn: RLT's teacher instruction and the question.

    The instruction is `INSTRUCTION_TOKEN` for a tokenizer built with the format (its meaning is
    what the warm-up teaches), else `SYSTEM` in words.
    """
    system = INSTRUCTION_TOKEN if tokenizer is not None and has_format_tokens(tokenizer) else SYSTEM
    return [{"role": "system", "content": system}, {"role": "user", "content": question}]


def writer_turn_start(solution: str) -> str:
    """The start of the writer's own turn: the solution in its tags, then the opened explanation."""
    return f"{SOLUTION_TAGS[0]}\n{solution}\n{SOLUTION_TAGS[1]}\n\n{EXPLANATION_TAGS[0]}\n"


def writer_prompt_text(tokenizer, question: str, solution: str) -> str:
    """The writer's whole prompt as text: the chat template with a generation prompt, then `writer_turn_start`."""
    head = tokenizer.apply_chat_template(writer_messages(question, tokenizer), tokenize=False,
                                         add_generation_prompt=True)
    return head + writer_turn_start(solution)


def writer_prompt_ids(tokenizer, question: str, solution: str) -> list[int]:
    """`writer_prompt_text` as token ids (no special tokens added beyond the template's)."""
    return list(tokenizer(writer_prompt_text(tokenizer, question, solution), add_special_tokens=False)["input_ids"])


def split_explanation(text: str) -> tuple[str, bool]:
    """(the explanation, whether the writer closed it): the text before RLT's closing explanation tag,
    or, where the writer never wrote that tag, the whole text (RLT then appends the tag and charges
    its `not_matched_penalty`; `PartnerRewardConfig.format_penalty`)."""
    at = text.find(EXPLANATION_TAGS[1])
    if at < 0:
        return text.rstrip("\n"), False
    return text[:at].rstrip("\n"), True


def writer_warmup_response(explanation: str) -> str:
    """What the writer writes after `writer_turn_start`: the explanation, then the closing tag
    (the chat's end of turn follows). The SFT warm-up trains the writer on this text."""
    return f"{explanation}\n{EXPLANATION_TAGS[1]}"


def student_completion(explanation: str, solution: str) -> str:
    """RLT's student form: the explanation as the student's reasoning between the think tags, then the
    reference solution between the solution tags; a student distilled from a writer who saw the
    solution learns question -> this."""
    return (f"{THOUGHT_TAGS[0]}\n{explanation}\n{THOUGHT_TAGS[1]}\n\n"
            f"{SOLUTION_TAGS[0]}\n{solution}\n{SOLUTION_TAGS[1]}")
