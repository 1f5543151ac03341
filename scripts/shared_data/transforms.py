"""The pure steps the benchmark builders share: the row every shared JSONL holds, its bytes, and
the answers and ids read out of each source's own form.
"""

from __future__ import annotations

import json
import re


def row(id_: str, problem: str, answer: str, source: str) -> dict:
    """One benchmark row, keys in the order every shared JSONL uses."""
    return {"id": id_, "problem": problem, "answer": answer, "source": source}


def to_jsonl(rows) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def read_jsonl(raw: bytes) -> list[dict]:
    return [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]


def last_boxed(text: str) -> str | None:
    """The brace-matched content of the last `\\boxed{...}` in `text`, stripped; None if there is none."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, i = 0, start + len("\\boxed")
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i + 1:j].strip()
    return None


def integer_answer(value: float) -> str:
    """A float answer that is a whole number as an integer string: 27.0 -> "27"."""
    if not float(value).is_integer():
        raise ValueError(f"answer {value!r} is not a whole number")
    return str(int(value))


def gsm8k_answer(solution: str) -> str:
    """The final answer of a GSM8K solution: the text after `####`, stripped (commas kept)."""
    return solution.split("####")[-1].strip()


def aime_url_id(url: str) -> str:
    """`.../2024_AIME_I_Problems/Problem_7` -> `aime2024-I-7`."""
    m = re.search(r"(\d{4})_AIME_(I+)_Problems/Problem_(\d+)", url)
    if not m:
        raise ValueError(f"not an AoPS AIME problem url: {url}")
    return f"aime{m[1]}-{m[2]}-{m[3]}"


def aime_split_id(year: int, n: int, per_exam: int = 15) -> str:
    """Problems numbered 1..30 across both exams of a year: 16 -> `aime{year}-II-1`."""
    part, k = ("I", n) if n <= per_exam else ("II", n - per_exam)
    return f"aime{year}-{part}-{k}"


def strip_suffix(text: str, suffix: str) -> str:
    if not text.endswith(suffix):
        raise ValueError(f"prompt does not end with the expected suffix {suffix!r}")
    return text[: -len(suffix)]


def drop_duplicates(rows) -> list[dict]:
    """Keep the first of rows with the same (problem, answer), compared without surrounding whitespace."""
    seen, out = set(), []
    for r in rows:
        key = (r["problem"].strip(), r["answer"].strip())
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out
