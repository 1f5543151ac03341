"""The evaluation prompt: one user turn, rendered with the tokenizer's own chat template.

The user message is the problem, a separator, then an instruction: `INSTRUCTION` (the
standard Qwen-Math wording, after a newline) by default, or `PAPER_INSTRUCTION` (the
release's wording, which starts with a space and follows the problem directly; the
`paper` preset, `tandem_eval.core.presets`). Both are defined here and nowhere else. The template is applied with
`add_generation_prompt=True` and `enable_thinking=False` (which keeps hybrid Qwen3
checkpoints out of thinking mode and is ignored by templates without that switch), rendered
to text and encoded without adding special tokens, since the template already holds them.
"""

from __future__ import annotations

from tandem.errors import TandemError

INSTRUCTION = "Please reason step by step, and put your final answer within \\boxed{}."
# The release's (data/build_evals.py, data/build_deepscaler.py of CSSLab/Tandem-RLVR), for training and eval alike.
PAPER_INSTRUCTION = (" Solve the following math problem step by step. Put your final answer inside \\boxed{}, "
                     "like \\boxed{42} or \\boxed{\\frac{1}{2}}.")


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
