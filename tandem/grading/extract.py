"""Extraction: the final answer a response commits to, found in linear time.

`extract_answer(text)` takes, in this order of preference: the content of the last
*outermost complete* `\\boxed{...}` / `\\fbox{...}` (nested braces matched, `\\{` `\\}`
ignored; a box inside it is part of it, so `\\boxed{5 \\text{ or } \\boxed{6}}` is read
whole; a box inside a box that never closes is no answer); else everything after the last
"final answer is" / "Final answer:" / "**Final Answer**:" / a line that is only "Final Answer"
(a `## Final Answer` heading, `**Final Answer**`; display math on the next lines is read); else
after the last "the answer is" / "Answer:"; else
after the last `####` (GSM8K style); else nothing (None: graded incorrect). After an answer
phrase the answer runs to the end of the response: a second `$...$` span or a second
sentence is part of it, so a hedge written there is read (and refused) rather than cut
off; only a closing sentence from the closed list `SIGN_OFFS` ("I hope it is correct.") is
dropped. There is deliberately no "last number in the text" fallback: a stray digit is not a
committed answer, and as an RL reward it would pay for guessing.

Every scan is linear in the response: one pass finds the boxes, one pass pairs their
braces, and an answer phrase is read from a window of `ANSWER_WINDOW` characters (an
answer longer than the grader's length cap is refused anyway, so a longer window could
not change a verdict).
"""

from __future__ import annotations

import re

BOX_COMMANDS = ("\\boxed", "\\fbox")
# After an answer phrase, how far to read. Twice the grader's answer cap
# (tandem.grading.grader.MAX_ANSWER_CHARS): an answer that ends inside it is read whole,
# and one that does not is longer than the cap, so it is refused as too long either way.
ANSWER_WINDOW = 2000

_BOX_START = re.compile(r"\\(?:boxed|fbox)(?![A-Za-z])")
_BRACE_TOKEN = re.compile(r"\\.|[{}]", re.DOTALL)  # an escaped character, or a brace
_BOX_TOKEN = re.compile(r"[^\s$]+")
_MARKERS = [  # tried in order; within one marker the last occurrence wins
    # "final answer is", "Final answer:", "**Final Answer**: 23", or a line that is only the words
    # (a `## Final Answer` heading, `**Final Answer**`, `Final Answer:`): what follows it, display
    # math on the next lines included, is the answer.
    re.compile(r"final answer\s*\**\s*(?:is|:)\s*:?"
               r"|^[ \t]*(?:#{1,6}[ \t]*)?\**[ \t]*final answer[ \t]*:?[ \t]*\**[ \t]*:?[ \t]*$",
               re.IGNORECASE | re.MULTILINE),
    re.compile(r"\banswer\s*(?:is|:)\s*:?", re.IGNORECASE),
    re.compile(r"####"),
]


def brace_pairs(text: str, start: int = 0) -> dict[int, int]:
    """Index of every `{` at or after `start` that closes -> index of its `}` (one pass)."""
    pairs, stack = {}, []
    for token in _BRACE_TOKEN.finditer(text, start):
        ch = token.group()
        if ch == "{":
            stack.append(token.start())
        elif ch == "}" and stack:
            pairs[stack.pop()] = token.start()
    return pairs


def _strip_keeping_escapes(s: str) -> str:
    """`s.strip()`, except that `\\ ` (a control space) keeps its space."""
    s = s.lstrip()
    end = len(s.rstrip())
    return s[: end + 1] if s[:end].endswith("\\") and end < len(s) else s[:end]


def last_boxed(text: str) -> str | None:
    """Content of the last outermost complete `\\boxed{...}` / `\\fbox{...}` (also `\\boxed 5`)."""
    starts = [m.end() for m in _BOX_START.finditer(text)]
    if not starts:
        return None
    pairs = brace_pairs(text, starts[0])
    found, covered = None, -1  # `covered`: where the last outermost box closes
    for end in starts:
        if end <= covered:
            continue  # inside the box found last: part of it
        j = end
        while j < len(text) and text[j] == " ":
            j += 1
        if j < len(text) and text[j] == "{":
            if j not in pairs:
                return found  # a box that never closes: what follows is inside it
            found, covered = _strip_keeping_escapes(text[j + 1 : pairs[j]]), pairs[j]
        elif j > end:  # `\boxed 5`: one token after a space
            token = _BOX_TOKEN.match(text, j)
            if token:
                found, covered = token.group(), token.end()
    return found


# Closing sentences that say nothing about the answer (Minerva's few-shot format ends in the
# first): dropped after an answer phrase, the only words there that are.
SIGN_OFFS = ("I hope it is correct.", "I hope this is correct.", "I hope it helps.", "I hope this helps.")


def _after_marker(rest: str) -> str | None:
    answer = rest.strip()
    for sign_off in SIGN_OFFS:
        if answer.endswith(sign_off):
            answer = answer[: -len(sign_off)].rstrip()
            break
    answer = answer.lstrip("*:").strip().rstrip("*").strip()
    return answer or None


def extract_answer(text: str) -> str | None:
    """The final answer a response commits to (see the module docstring), or None."""
    if not text:
        return None
    boxed = last_boxed(text)
    if boxed is not None:
        return boxed
    for marker in _MARKERS:
        last = None
        for last in marker.finditer(text):
            pass
        if last is not None:
            answer = _after_marker(text[last.end() : last.end() + ANSWER_WINDOW])
            if answer:
                return answer
    return None
