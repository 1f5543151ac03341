"""Fetching the files a resolver chose: each pinned wheel with `pip download --no-deps` and the
target's tags (no interpreter of the target's version is needed for that), pinned to the
sha256 the resolver saw so pip takes exactly that file; wheels built here are copied.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path

from .basics import Dist, WheelhouseError, last_error, pip_target_args, sha256_of


def local_path(url: str) -> Path | None:
    """The file a file:// URL names (a find-links folder, a wheel built from an sdist), else None."""
    parsed = urllib.parse.urlparse(url)
    return Path(urllib.request.url2pathname(parsed.path)) if parsed.scheme == "file" else None


def download(dists: list[Dist], dest: Path, python: str, platforms: tuple[str, ...],
             index_args: list[str] | None = None, executable: str = sys.executable) -> None:
    """Every file of `dists` into `dest`: local ones copied, the rest by pip (hashes required where all are known)."""
    remote = [d for d in dists if local_path(d.url) is None]
    for d in dists:
        if (path := local_path(d.url)) is not None:
            shutil.copyfile(path, dest / d.file)
    if not remote:
        return
    hashed = all(d.sha256 for d in remote)
    lines = [f"{d.name}=={d.version}" + (f" --hash=sha256:{d.sha256}" if hashed else "") for d in remote]
    with tempfile.TemporaryDirectory(prefix="wheelhouse-download-") as tmp:
        reqs = Path(tmp, "requirements.txt")
        reqs.write_text("\n".join(lines) + "\n")
        cmd = [executable, "-m", "pip", "download", "--no-deps", "--progress-bar", "off",
               *(["--require-hashes"] if hashed else []), *pip_target_args(python, platforms), *(index_args or []),
               "--dest", str(dest), "-r", str(reqs)]
        res = subprocess.run(cmd, stderr=subprocess.PIPE, text=True)  # its "Saved ..." lines show progress
    if res.returncode != 0:
        raise WheelhouseError(f"pip download failed: {last_error(res.stderr, res.returncode)}; "
                              "run again (what was downloaded is kept)")


def file_entry(out: Path, dist: Dist) -> dict:
    """The manifest's entry of one downloaded file, checked against what the resolver saw."""
    path = out / dist.file
    if not path.is_file():
        raise WheelhouseError(f"pip download did not leave {dist.file} in {out}: run again")
    sha, size = sha256_of(path), path.stat().st_size
    if (dist.sha256 and sha != dist.sha256) or (dist.bytes is not None and size != dist.bytes):
        path.unlink()
        raise WheelhouseError(f"{dist.file} downloaded with sha256 {sha[:12]}... and {size} bytes, the index says "
                              f"{(dist.sha256 or '?')[:12]}... and {dist.bytes} bytes: run again (the file was removed)")
    return {"name": dist.name, "version": dist.version, "file": dist.file, "sha256": sha, "bytes": size}
