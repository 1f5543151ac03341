"""Download, check, write: each target built from its sources (each URL fetched once per run),
checked against its committed sum, and written atomically; a file already there with the
right sum is skipped, so an interrupted run simply starts again.
"""

from __future__ import annotations

import os
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Callable

from .basics import FetchError, NetworkError, read_sums, sha256
from .targets import TARGETS, Target


def download(url: str, tries: int = 3, timeout: float = 60) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "tandem-rlvr fetch_shared_data"})
    for attempt in range(1, tries + 1):
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.read()
        except urllib.error.HTTPError as e:
            if e.code < 500 or attempt == tries:
                raise FetchError(f"{url} answered HTTP {e.code}; if that persists the source has moved: "
                                 f"report it in the project's issues")
        except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
            if attempt == tries:
                reason = getattr(e, "reason", e)
                raise NetworkError(f"download of {url} failed ({reason}); check the network and run the script again")
        time.sleep(2 * attempt)


def write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the data from other users of a shared dir
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def produce(target: Target, want: str, fetch: Callable[[str], bytes]) -> bytes:
    """The target's bytes, built from its sources and checked against the committed sum."""
    try:
        data = target.build(*(fetch(url) for url in target.urls))
    except FetchError:
        raise
    except Exception as e:  # a source that no longer has the documented shape
        raise FetchError(f"building it from {target.urls[0]} failed ({type(e).__name__}: {e}); "
                         f"the source may have changed: report it in the project's issues")
    got = sha256(data)
    if got != want:
        why = target.note or f"the source {target.urls[0]} may have changed: report it in the project's issues"
        raise FetchError(f"sha256 {got[:16]}… does not match the committed {want[:16]}… "
                         f"(scripts/shared_data.sha256); nothing written; {why}")
    return data


def fetch_all(out: Path, targets=TARGETS, sums: dict[str, str] | None = None, fetch=download,
              log=print) -> list[str]:
    """Produce every target under `out`; returns the paths that failed (each already reported)."""
    sums = read_sums() if sums is None else sums
    cache: dict[str, bytes] = {}

    def cached(url: str) -> bytes:
        if url not in cache:
            cache[url] = fetch(url)
        return cache[url]

    failed = []
    for n, target in enumerate(targets, start=1):
        path, want = out / target.path, sums[target.path]
        prefix = f"[{n}/{len(targets)}] {target.path}"
        if path.is_file() and sha256(path.read_bytes()) == want:
            log(f"{prefix}: present, sha256 ok")
            continue
        try:
            data = produce(target, want, cached)
        except FetchError as e:
            log(f"error: {target.path}: {e}")
            failed.append(target.path)
            if isinstance(e, NetworkError):
                failed += [t.path for t in targets[n:]]
                break
            continue
        write_atomically(path, data)
        log(f"{prefix}: written ({len(data):,} bytes), sha256 ok")
    return failed
