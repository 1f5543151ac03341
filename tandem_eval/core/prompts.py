"""The evaluation prompt: one user turn, rendered with the tokenizer's own chat template.

The user message is the problem, a separator, then an instruction: `INSTRUCTION` (the
standard Qwen-Math wording, after a newline) by default, or `PAPER_INSTRUCTION` (the
release's wording, which starts with a space and follows the problem directly; the
`paper` preset, `tandem_eval.core.presets`). Both are defined here and nowhere else. The template is applied with
`add_generation_prompt=True` and `enable_thinking=False` (which keeps hybrid Qwen3
checkpoints out of thinking mode and is ignored by templates without that switch), rendered
to text and encoded without adding special tokens, since the template already holds them.

A model may carry its own prompt format (`PROMPT_FORMAT_NAME` beside its HF files, written by
the embedded trainers: their models learnt the bare problem); the eval tools take its
instruction when `--instruction` is left out, so a demo model is evaluated as it was trained.
"""

from __future__ import annotations

import json
from pathlib import Path

from tandem.errors import TandemError

INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
# The release's (data/build_evals.py, data/build_deepscaler.py of CSSLab/Tandem-RLVR), for training and eval alike.
PAPER_INSTRUCTION = (" Solve the following math problem step by step. Put your final answer inside \\boxed{}, "
                     "like \\boxed{42} or \\boxed{\\frac{1}{2}}.")


PROMPT_FORMAT_NAME = "tandem_prompt.json"  # {"instruction": TEXT}: the instruction the model was trained with


def write_prompt_format(model_dir: str | Path, instruction: str) -> Path:
    """Record beside a model's HF files the instruction it was trained with ("" = the bare problem)."""
    path = Path(model_dir) / PROMPT_FORMAT_NAME
    path.write_text(json.dumps({"instruction": instruction}) + "\n", encoding="utf-8")
    return path


def recorded_instruction(model: str | Path) -> str | None:
    """The instruction a model folder records (`write_prompt_format`), or None when it records none
    (a hub name, a model from elsewhere). A record that cannot be read is refused, never guessed around."""
    path = Path(model) / PROMPT_FORMAT_NAME
    if not path.is_file():
        return None
    try:
        value = json.loads(path.read_text(encoding="utf-8"))["instruction"]
    except (OSError, ValueError, KeyError, TypeError):
        value = None
    if not isinstance(value, str):
        raise TandemError(f"{path} does not hold {{\"instruction\": TEXT}}; fix it, delete it, or pass --instruction")
    return value


def user_message(problem: str, instruction: str = INSTRUCTION, separator: str = "\n") -> str:
    """The user turn: the problem, the separator, the instruction (just the problem when it is empty)."""
    return f"{problem}{separator}{instruction}" if instruction else problem


def chat_prompt_text(tokenizer, problem: str, instruction: str = INSTRUCTION, separator: str = "\n") -> str:
    if not getattr(tokenizer, "chat_template", None):
        raise TandemError(
            "the tokenizer has no chat template; evaluate an instruct/chat checkpoint "
            "or add a chat_template to its tokenizer_config.json"
        )
    messages = [{"role": "user", "content": user_message(problem, instruction, separator)}]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, enable_thinking=False)


def chat_prompt_ids(tokenizer, problem: str, instruction: str = INSTRUCTION, separator: str = "\n") -> list[int]:
    """Token ids of the chat prompt for `problem` (ends where the assistant's reply begins)."""
    text = chat_prompt_text(tokenizer, problem, instruction, separator)
    return list(tokenizer(text, add_special_tokens=False)["input_ids"])
