"""What every step shares: the committed sums (scripts/shared_data.sha256), where the data goes
by default, sha256, and the two errors (a file that could not be produced; the network down).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SUMS = REPO / "scripts" / "shared_data.sha256"
DEFAULT_OUT = REPO.parent / "shared" / "data"


class FetchError(Exception):
    """A file could not be produced; the message is the one line shown to the user."""


class NetworkError(FetchError):
    """The network failed (not one source), so the other files would fail the same way: stop."""


def read_sums(path: Path = SUMS) -> dict[str, str]:
    """`sha256sum` lines (`<hex>  <relative path>`) as {path: hex}."""
    sums = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            sums[name.lstrip("*")] = digest
    return sums


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
