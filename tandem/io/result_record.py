"""Result records: a small JSON of an experiment's numbers, stamped with the commit and the machine that made them.

The documents' tables and inline figures are rendered from these files (`scripts/render_results.py`),
never typed: a record is the one place a number lives. Each record holds

- `kind`: the experiment kind whose numbers it holds (`scripts/record_results.py` lists them),
- `commit`: `sha` (`git rev-parse HEAD`), `short` and `dirty` (the working tree differed from it),
- `machine`: `platform`, `cpu_model` (`/proc/cpuinfo`'s model name), `cores` (CPUs this process may use),
  `threads` (torch CPU threads the runs used), `python`, and the versions of the `packages` that set the digits,
- `command`: the command that wrote the record; `runs`: the commands that made each run it reads,
- `numbers`: the kind's numbers (per seed where there are seeds; the renderers take means and ranges).

`read_record` refuses a file without these keys in one line naming the file and the missing keys.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from tandem.errors import TandemError

REQUIRED = ("kind", "commit", "machine", "command", "numbers")
COMMIT_KEYS = ("sha", "dirty")
MACHINE_KEYS = ("platform", "cpu_model", "cores", "threads")
PACKAGES = ("torch", "transformers")  # the digits of a CPU run move with these


def commit_stamp(repo: str | Path = ".") -> dict:
    """`sha` and `short` of HEAD in `repo`, and `dirty`: whether tracked files differ from it (None where no git)."""
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    sha = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"sha": sha, "short": sha[:7] if sha else None, "dirty": None if status is None else bool(status)}


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, else what `platform` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def machine_stamp(threads: int | None) -> dict:
    """The machine a record's runs used: platform, CPU model, the cores this process may use, torch's threads."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cores": cores,
        "threads": threads,
        "python": platform.python_version(),
        "packages": {name: _version(name) for name in PACKAGES},
    }


def stamp(kind: str, numbers: dict, command: str, *, threads: int | None, runs: list[str] | None = None,
          repo: str | Path = ".") -> dict:
    """A record of `numbers` of experiment `kind`, stamped with the commit of `repo` and this machine."""
    return {
        "kind": kind,
        "commit": commit_stamp(repo),
        "machine": machine_stamp(threads),
        "written": datetime.now(timezone.utc).strftime("%Y-%m-%d"),
        "command": command,
        "runs": list(runs or []),
        "numbers": numbers,
    }


def missing_keys(record: dict) -> list[str]:
    """The stamp's keys `record` lacks (`commit.sha`, `machine.cpu_model`, ...); empty when it is whole."""
    missing = [k for k in REQUIRED if k not in record]
    for key, inner in (("commit", COMMIT_KEYS), ("machine", MACHINE_KEYS)):
        if isinstance(record.get(key), dict):
            missing += [f"{key}.{k}" for k in inner if k not in record[key]]
        elif key in record:
            missing.append(f"{key} (not an object)")
    return missing


def write_record(path: str | Path, record: dict) -> Path:
    """Write `record` (refused when unstamped) as indented JSON, keys in the stamp's order."""
    if missing := missing_keys(record):
        raise TandemError(f"{path}: the record lacks {', '.join(missing)}; build it with tandem.io.result_record.stamp")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


def read_record(path: str | Path) -> dict:
    """A result record; a missing file, bad JSON or a record without its stamp is one line naming the file."""
    path = Path(path)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TandemError(f"{path}: no such result file; write it with scripts/record_results.py") from None
    except json.JSONDecodeError as e:
        raise TandemError(f"{path}: not valid JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(record, dict):
        raise TandemError(f"{path}: a result record is a JSON object, got {type(record).__name__}")
    if missing := missing_keys(record):
        raise TandemError(f"{path}: the record lacks {', '.join(missing)} (no commit or machine: not a result "
                          "file of scripts/record_results.py)")
    return record
