"""What an evaluation finds in its `--out-dir` and continues from: finished benchmarks, finished problems.

A benchmark whose summary and samples exist with this run's config is done; within a
benchmark, finished problems are appended to `<benchmark>.partial.jsonl` (its first line
holds the config) and a killed run continues from them. A stored output of another config
is refused in one line naming what differs (another preset first) unless `--overwrite`.

A kill can land anywhere, so the file is never without its header or its finished rows:
it is created, and rewritten on resume, whole by an atomic rename; only appends can be
cut short, and a cut last line is dropped, by the reader and before the next append. A
file with no whole first line (written so before creation was atomic) holds no finished
problem: it is read as not started.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from tandem.io.config_files import config_diff
from tandem.io.jsonl import write_jsonl
from tandem.errors import TandemError
from tandem_eval.core.datasets import Problem
from tandem_eval.core.presets import DEFAULT_PRESET
from tandem_eval.core.rows import SampleRow


def problems_digest(problems: list[Problem]) -> str:
    """A short hash of a benchmark's problems, recorded in its config: other problems are another run."""
    h = hashlib.sha256()
    for p in problems:
        h.update(json.dumps([p.id, p.problem, p.answer, p.source]).encode())
    return h.hexdigest()[:16]


def file_stem(benchmark: str) -> str:
    """The stem of a benchmark's output files (a path or hub name made one file name)."""
    return benchmark.replace("/", "__").replace(":", "_")


def check_same_config(path: Path, stored: dict, config: dict) -> None:
    """One line naming what differs between a stored output's config and this run's (another preset first)."""
    if stored.get("preset", DEFAULT_PRESET) != config.get("preset", DEFAULT_PRESET):
        raise TandemError(
            f"{path} was made with the {stored.get('preset', DEFAULT_PRESET)!r} eval preset, this run asks for "
            f"{config.get('preset', DEFAULT_PRESET)!r}; outputs of two presets are never mixed: pass --overwrite "
            "to start over, or choose another --out-dir")
    differ = config_diff(stored, config) or ["(unreadable config)"]
    raise TandemError(
        f"{path} was written with a different config (differs in: {', '.join(differ)}); "
        "pass --overwrite to recompute it, or choose another --out-dir"
    )


def existing_summary(summary_path: Path, samples_path: Path, config: dict, overwrite: bool) -> dict | None:
    """The stored summary if this benchmark is already done with the same config, else None."""
    if not (summary_path.is_file() and samples_path.is_file()):
        return None
    try:
        stored = json.loads(summary_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        stored = {}
    if stored.get("config") == config:
        return stored
    if overwrite:
        return None
    check_same_config(summary_path, stored.get("config", {}), config)
    return None


def partial_lines(path: Path) -> list[str]:
    """A partial file's lines, or [] when it is missing or holds no whole first line (a header a kill cut short)."""
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8")
    return text.splitlines() if "\n" in text else []


def partial_config(lines: list[str]) -> dict:
    """The config in a partial file's header, {} when the header is not a JSON object holding one."""
    try:
        head = json.loads(lines[0]) if lines else {}
    except json.JSONDecodeError:
        return {}
    config = head.get("config") if isinstance(head, dict) else None
    return config if isinstance(config, dict) else {}


def read_partial(path: Path, config: dict, n: int, overwrite: bool) -> dict[str, list[SampleRow]]:
    """Finished samples of an interrupted run of this benchmark: {problem id: its n rows}."""
    lines = partial_lines(path)
    if not lines:
        return {}
    if partial_config(lines) != config:
        if overwrite:
            return {}
        check_same_config(path, partial_config(lines), config)
    rows: dict[str, list[SampleRow]] = {}
    for line in lines[1:]:
        try:
            row = SampleRow.from_json(json.loads(line))
        except (json.JSONDecodeError, TypeError):  # the last line of a killed write
            break
        rows.setdefault(row.problem_id, []).append(row)
    return {pid: sorted(r, key=lambda x: x.sample) for pid, r in rows.items() if len(r) == n}


def write_partial(path: Path, config: dict, rows: list[SampleRow]) -> None:
    """Create or replace the partial file whole (header and rows) by an atomic rename."""
    write_jsonl(path, [{"config": config}, *(row.to_json() for row in rows)])


def append_rows(path: Path, config: dict, rows: list[SampleRow]) -> None:
    """Add finished rows; the first rows create the file whole, so it never lacks its header."""
    keep = _whole_lines_end(path)
    if not keep:  # missing, or its header cut short: nothing whole to keep
        write_partial(path, config, rows)
        return
    with path.open("r+b") as f:
        f.truncate(keep)  # a last line a kill cut short: the next row appended to it would be lost with it
        f.seek(keep)
        f.write("".join(json.dumps(row.to_json(), ensure_ascii=False) + "\n" for row in rows).encode("utf-8"))
        f.flush()


def _whole_lines_end(path: Path, block: int = 1 << 16) -> int:
    """The byte offset just past the file's last newline, read from its end (a run appends often to a
    growing file); 0 when the file is missing or holds no whole line."""
    if not path.is_file():
        return 0
    with path.open("rb") as f:
        end = f.seek(0, os.SEEK_END)
        while end > 0:
            start = max(0, end - block)
            f.seek(start)
            at = f.read(end - start).rfind(b"\n")
            if at >= 0:
                return start + at + 1
            end = start
    return 0
