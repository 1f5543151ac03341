"""Reading and writing JSONL files with errors that name the file and line.

Input files are read as bytes and decoded line by line, so a byte that is not UTF-8 is
one line naming the file, the line, the byte and its column (`decode_line`), never a
`UnicodeDecodeError` traceback. A UTF-8 byte-order mark at the file's start is accepted.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, Iterator

from tandem.errors import TandemError


def read_jsonl(path: str | os.PathLike, required: Iterable[str] = ()) -> list[dict]:
    """Read every row of a JSONL file; each row must be an object holding `required` keys."""
    return list(iter_jsonl(path, required))


def iter_jsonl(path: str | os.PathLike, required: Iterable[str] = ()) -> Iterator[dict]:
    path = Path(path)
    if not path.is_file():
        raise TandemError(f"{path}: no such file; pass an existing JSONL file (one JSON object per line)")
    required = tuple(required)
    with path.open("rb") as f:
        for lineno, raw in enumerate(f, 1):
            line = decode_line(path, lineno, raw)
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise TandemError(f"{path}:{lineno}: not valid JSON ({e.msg}); fix or remove that line") from None
            if not isinstance(row, dict):
                raise TandemError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
            missing = [k for k in required if k not in row]
            if missing:
                raise TandemError(f"{path}:{lineno}: missing key(s) {missing}; every row needs {list(required)}")
            yield row


def decode_line(path: str | os.PathLike, lineno: int, raw: bytes) -> str:
    """Line `lineno` of `path` as text; a byte that is not UTF-8 is one error naming it and its column (1-based)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise TandemError(f"{path}:{lineno}: not UTF-8 (byte 0x{raw[e.start]:02X} at column {e.start + 1}); "
                          "save the file as UTF-8") from None
    return text.removeprefix("\ufeff") if lineno == 1 else text


def read_text(path: str | os.PathLike) -> str:
    """A whole text file, decoded as `decode_line` does (the error names the line and column)."""
    lines = Path(path).read_bytes().splitlines(keepends=True)
    return "".join(decode_line(path, n, raw) for n, raw in enumerate(lines, 1))


def read_json(path: str | os.PathLike, fix: str = "fix it, or re-run what wrote it") -> dict:
    """One JSON object from a file, read as the JSONL rows are: a missing file, a byte that is not UTF-8,
    text that is not JSON or a document that is not an object is one line naming the file, and `fix`."""
    path = Path(path)
    if not path.is_file():
        raise TandemError(f"{path}: no such file; {fix}")
    try:
        document = json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise TandemError(f"{path}:{e.lineno}: not valid JSON ({e.msg}); {fix}") from None
    if not isinstance(document, dict):
        raise TandemError(f"{path}: expected a JSON object, got {type(document).__name__}; {fix}")
    return document


def write_jsonl(path: str | os.PathLike, rows: Iterable[dict]) -> None:
    """Write rows atomically: to a temporary file first, then rename over `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    os.replace(tmp, path)


def write_json(path: str | os.PathLike, obj) -> None:
    """Write one JSON document atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
