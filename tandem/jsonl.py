"""Reading and writing JSONL files with errors that name the file and line."""

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
    with path.open(encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
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
