"""The evaluation prompt: one user turn, rendered with the tokenizer's own chat template.

The user message is the problem, a newline, then `INSTRUCTION` (the standard Qwen-Math
wording; defined here and nowhere else). The template is applied with
`add_generation_prompt=True` and `enable_thinking=False` (which keeps hybrid Qwen3
checkpoints out of thinking mode and is ignored by templates without that switch), rendered
to text and encoded without adding special tokens, since the template already holds them.
"""

from __future__ import annotations

from tandem.errors import TandemError

INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."


def user_message(problem: str, instruction: str = INSTRUCTION) -> str:
    """The user turn: the problem, a newline, the instruction (just the problem when it is empty)."""
    return f"{problem}\n{instruction}" if instruction else problem


def chat_prompt_text(tokenizer, problem: str, instruction: str = INSTRUCTION) -> str:
    if not getattr(tokenizer, "chat_template", None):
        raise TandemError(
            "the tokenizer has no chat template; evaluate an instruct/chat checkpoint "
            "or add a chat_template to its tokenizer_config.json"
        )
    messages = [{"role": "user", "content": user_message(problem, instruction)}]
    return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True, enable_thinking=False)


def chat_prompt_ids(tokenizer, problem: str, instruction: str = INSTRUCTION) -> list[int]:
    """Token ids of the chat prompt for `problem` (ends where the assistant's reply begins)."""
    return list(tokenizer(chat_prompt_text(tokenizer, problem, instruction), add_special_tokens=False)["input_ids"])
