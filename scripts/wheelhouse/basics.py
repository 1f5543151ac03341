"""What every step of the wheelhouse shares: its error, the Dist record, file names, sizes, sha256."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MANIFEST = "manifest.json"  # a built wheelhouse
LOCK = "lock.txt"  # the closure, as pip requirement lines with the chosen file's sha256
PLAN = "plan.json"  # --resolve-only: the files a build would fetch
FORMAT = 1
MIB = 1 << 20
CHUNK = 4 * MIB


class WheelhouseError(Exception):
    """Bad input or a failed step: one line naming the problem and the fix."""


class ResolveError(WheelhouseError):
    """The resolver found no closure (the --present pins may be the cause)."""


@dataclass(frozen=True)
class Dist:
    """One resolved distribution and the file it is installed from."""

    name: str
    version: str
    file: str
    url: str
    sha256: str | None
    bytes: int | None = None  # the index's size of the file, where it says


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them (Foo_Bar -> foo-bar)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def base_version(version: str) -> str:
    """The version without its local label (2.11.0+cu130 -> 2.11.0)."""
    return version.split("+")[0]


def unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def pip_target_args(python: str, platforms: tuple[str, ...]) -> list[str]:
    """pip's options for wheels that CPython X.Y on `platforms` installs, whatever runs pip."""
    abi = "cp" + python.replace(".", "")
    return ["--only-binary=:all:", "--python-version", python, "--implementation", "cp", "--abi", abi,
            *(arg for p in platforms for arg in ("--platform", p))]


def last_error(stderr: str, rc: int, tool: str = "pip") -> str:
    """The last `ERROR:`/`error:` line of a tool's output, with uv's `cause:` line after it, in one line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    starts = [i for i, line in enumerate(lines) if line.lower().startswith("error:")]
    if not starts:
        return f"{tool} exited {rc}"
    text = " ".join(lines[starts[-1]:starts[-1] + 3])
    return re.sub(r"^error:\s*", "", text, flags=re.IGNORECASE)[:400]
