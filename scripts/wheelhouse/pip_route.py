"""The interpreter route (--resolver pip): pip's own resolver, run by a CPython of the target's version.

pip evaluates environment markers (python_version > "3.11", platform_system == "Linux") with
the interpreter that runs it, whatever --python-version and --platform say, so this route
needs a CPython X.Y on Linux x86_64 here. The uv route (uv.py) needs neither.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from . import download
from .basics import Dist, ResolveError, WheelhouseError, last_error, normalize, pip_target_args
from .sdists import SdistBuilder
from .tags import file_name
from .target import PLATFORMS


def resolver_python(python: str) -> str:
    """A CPython X.Y on Linux x86_64 with pip, to run pip's resolver (it reads markers from its own interpreter)."""
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        raise WheelhouseError(f"this machine is {platform.system()} {platform.machine()}: pip evaluates the "
                              "stack's platform markers where it runs, so build the wheelhouse on Linux x86_64 "
                              "(a container will do), or with --resolver uv")
    if f"{sys.version_info.major}.{sys.version_info.minor}" == python and sys.implementation.name == "cpython":
        return sys.executable
    found = shutil.which(f"python{python}")
    probe = "import sys, pip; print('%d.%d %s' % (sys.version_info[0], sys.version_info[1], sys.implementation.name))"
    try:
        res = found and subprocess.run([found, "-c", probe], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        res = None
    if not res or res.returncode != 0 or res.stdout.split() != [python, "cpython"]:
        raise WheelhouseError(f"--python {python}: resolving for Python {python} with --resolver pip needs a CPython "
                              f"{python} with pip here (pip reads markers such as python_version from the interpreter "
                              f"that runs it), and python{python} on PATH is {'not one' if found else 'missing'}: "
                              f"use --resolver uv, install it, or run with "
                              f"GPU_WHEELHOUSE_LAUNCHER_PYTHON=/path/to/python{python}")
    return found


class Pip:
    """pip of a CPython X.Y (`resolver_python`), for the target's interpreter and platforms.

    Resolving takes two passes. The first, for this machine and with sdists allowed (binaries
    preferred), finds what has no wheel at all; each such sdist is built here into a pure
    wheel (sdists.py). The second pass, wheels only for the target's tags, sees those wheels
    too; without them pip would quietly fall back to old releases that need no sdist
    (hydra-core 0.11). `index_args` go to every call (tests use ["--no-index", "--find-links", DIR]).
    """

    name = "pip"

    def __init__(self, index_args: list[str] | None = None, executable: str = sys.executable,
                 build_isolation: bool = True, platforms: tuple[str, ...] = PLATFORMS):
        self.index_args, self.executable, self.platforms = list(index_args or []), executable, platforms
        self.sdists = SdistBuilder(self.index_args, executable, build_isolation)
        self.host_versions: dict[str, str] = {}  # normalized name -> version, from the first pass

    @property
    def built_from_sdist(self) -> list[Dist]:
        return self.sdists.built_from_sdist

    def identity(self) -> dict:
        res = subprocess.run([self.executable, "-m", "pip", "--version"], capture_output=True, text=True)
        version = res.stdout.split()[1] if res.returncode == 0 and len(res.stdout.split()) > 1 else None
        return {"name": "pip", "version": version}

    def report(self, requirements: list[str], constraints: list[str], extra: list[str]) -> dict:
        """pip's installation report for a dry run with `extra` options."""
        with tempfile.TemporaryDirectory(prefix="wheelhouse-resolve-") as tmp:
            reqs, cons, report = Path(tmp, "requirements.txt"), Path(tmp, "constraints.txt"), Path(tmp, "report.json")
            reqs.write_text("\n".join(requirements) + "\n")
            cons.write_text("\n".join(constraints) + "\n")
            cmd = [self.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                   "--report", str(report), *extra, *self.sdists.isolation(), *self.index_args,
                   "--find-links", str(self.sdists.built), "-r", str(reqs), "-c", str(cons)]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0 or not report.is_file():
                raise ResolveError(last_error(res.stderr, res.returncode))
            return json.loads(report.read_text())

    def resolve(self, python: str, requirements: list[str], constraints: list[str]) -> list[Dist]:
        host = dists_from_report(self.report(requirements, constraints, ["--prefer-binary"]), wheels_only=False)
        self.host_versions = {normalize(d.name): d.version for d in host}
        for dist in host:
            if not dist.file.endswith(".whl"):
                self.sdists.build(dist.name, dist.version)
        with tempfile.TemporaryDirectory(prefix="wheelhouse-target-") as tmp:
            extra = ["--target", str(Path(tmp, "target")), *pip_target_args(python, self.platforms)]
            return dists_from_report(self.report(requirements, constraints, extra))

    def download(self, python: str, dists: list[Dist], dest: Path) -> None:
        download.download(dists, dest, python, self.platforms, self.index_args, self.executable)


def dists_from_report(report: dict, wheels_only: bool = True) -> list[Dist]:
    """pip's installation report (--report): one Dist per distribution it would install."""
    out = []
    for item in report.get("install", []):
        meta, info = item["metadata"], item.get("download_info", {})
        url = info.get("url", "")
        archive = info.get("archive_info")
        if archive is None or (wheels_only and not url.endswith(".whl")):
            raise WheelhouseError(f"pip resolved {meta['name']} {meta['version']} to {url or 'no file'}, not a "
                                  "wheel from an index: remove that source from pip's configuration")
        sha = archive.get("hashes", {}).get("sha256")
        if sha is None and str(archive.get("hash", "")).startswith("sha256="):
            sha = archive["hash"].split("=", 1)[1]
        out.append(Dist(meta["name"], meta["version"], file_name(url), url, sha))
    return out
