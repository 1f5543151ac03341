"""The uv route (--resolver uv): a resolve for the target's Python and platform, run by any Python.

`uv pip compile --python-version X.Y --python-platform x86_64-manylinux_2_N` evaluates the
markers for the target itself, so no interpreter of the target's version is needed (uv would
fetch one it never runs, so --no-python-downloads; that took 10 s here, and failed). Its
lock (pylock.toml, PEP 751) lists every wheel of each release that suits the target, with
URL, size and sha256; tags.py picks the one the target's pip would install. A release with
no wheel for the target is built from its sdist into a pure wheel (sdists.py) or refused.

uv's version is pinned (UV_VERSION): the copy named by $GPU_WHEELHOUSE_UV, else one cached
under $XDG_CACHE_HOME/tandem-rlvr, else PyPI's uv wheel fetched once by pip into that cache
(the wheel carries the binary; nothing is installed into any environment).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from . import download
from .basics import Dist, ResolveError, WheelhouseError, last_error
from .sdists import SdistBuilder
from .tags import best_wheel, file_name
from .target import DEFAULT_PLATFORM, platform_tags

UV_VERSION = "0.13.9"


class UvUnavailable(WheelhouseError):
    """The pinned uv is neither given, nor cached, nor obtainable from the index."""


def cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tandem-rlvr" / f"uv-{UV_VERSION}"


def version_of(binary: str | Path) -> str | None:
    """`uv --version`'s version, or None when it does not run."""
    try:
        res = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    words = res.stdout.split()
    return words[1] if res.returncode == 0 and len(words) > 1 and words[0] == "uv" else None


def uv_binary(launcher: str = sys.executable) -> str:
    """The pinned uv's path: $GPU_WHEELHOUSE_UV, the cache, or PyPI's wheel unpacked into the cache."""
    given = os.environ.get("GPU_WHEELHOUSE_UV")
    if given:
        if version_of(given) != UV_VERSION:
            raise UvUnavailable(f"GPU_WHEELHOUSE_UV={given} is not uv {UV_VERSION} (it reports "
                                f"{version_of(given) or 'nothing'}): point it at uv {UV_VERSION} "
                                f"(pip install uv=={UV_VERSION}), or unset it to fetch that one")
        return given
    cached = cache_dir() / "uv"
    if not (cached.is_file() and version_of(cached) == UV_VERSION):
        install_uv(cached, launcher)
    return str(cached)


def install_uv(dest: Path, launcher: str) -> None:
    """PyPI's uv wheel for this machine, fetched by pip; its binary unpacked to `dest` and run once."""
    fix = (f"let pip reach PyPI, or give an installed uv {UV_VERSION} as GPU_WHEELHOUSE_UV=/path/to/uv, or resolve "
           "with --resolver pip under a CPython of the target's version")
    with tempfile.TemporaryDirectory(prefix="wheelhouse-uv-") as tmp:
        cmd = [launcher, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--quiet",
               "--dest", tmp, f"uv=={UV_VERSION}"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        wheels = sorted(Path(tmp).glob("uv-*.whl"))
        if res.returncode != 0 or not wheels:
            raise UvUnavailable(f"uv {UV_VERSION} cannot be installed here (pip download uv=={UV_VERSION}: "
                                f"{last_error(res.stderr, res.returncode)}): {fix}")
        with zipfile.ZipFile(wheels[0]) as z:
            member = next((n for n in z.namelist() if n.endswith(".data/scripts/uv")), None)
            if member is None:
                raise UvUnavailable(f"PyPI's {wheels[0].name} has no uv binary for this machine: {fix}")
            dest.parent.mkdir(parents=True, exist_ok=True)
            part = dest.with_name(f"uv.{os.getpid()}.tmp")
            part.write_bytes(z.read(member))
    part.chmod(0o755)
    if version_of(part) != UV_VERSION:
        part.unlink()
        raise UvUnavailable(f"the uv {UV_VERSION} from {wheels[0].name} does not run on this machine: {fix}")
    part.replace(dest)


class Uv:
    """uv's resolver for the target's Python and platform; pip downloads what it chose (download.py)."""

    name = "uv"

    def __init__(self, executable: str, platform: str = DEFAULT_PLATFORM, index_args: list[str] | None = None,
                 launcher: str = sys.executable, build_isolation: bool = True):
        self.executable, self.platform, self.launcher = executable, platform, launcher
        self.platforms = platform_tags(platform)
        self.index_args = list(index_args or [])
        self.sdists = SdistBuilder(self.index_args, launcher, build_isolation)
        self.pylock = ""  # the last lock uv wrote, as text

    @property
    def built_from_sdist(self) -> list[Dist]:
        return self.sdists.built_from_sdist

    def identity(self) -> dict:
        return {"name": "uv", "version": version_of(self.executable)}

    def resolve(self, python: str, requirements: list[str], constraints: list[str]) -> list[Dist]:
        import tomllib  # 3.11+, which reading pyproject.toml already asked for

        with tempfile.TemporaryDirectory(prefix="wheelhouse-uv-") as tmp:
            reqs, cons, lock = Path(tmp, "requirements.in"), Path(tmp, "constraints.txt"), Path(tmp, "pylock.toml")
            reqs.write_text("\n".join(requirements) + "\n")
            cons.write_text("\n".join(constraints) + "\n")
            cmd = [self.executable, "pip", "compile", str(reqs), "--constraints", str(cons), "--python-version",
                   python, "--python-platform", self.platform, "--format", "pylock.toml", "--output-file", str(lock),
                   "--no-header", "--quiet", "--no-python-downloads", *self.index_args]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0 or not lock.is_file():
                raise ResolveError(last_error(res.stderr, res.returncode, "uv"))
            self.pylock = lock.read_text()
        return [self.file_of(package, python) for package in tomllib.loads(self.pylock).get("packages", [])]

    def file_of(self, package: dict, python: str) -> Dist:
        """The wheel of one locked release the target installs; a pure one built from its sdist if it has none."""
        name, version = package["name"], package["version"]
        wheel = best_wheel(package.get("wheels", []), python, self.platforms)
        if wheel is not None:
            url = wheel.get("url") or Path(wheel["path"]).resolve().as_uri()
            return Dist(name, version, wheel.get("name") or file_name(url), url,
                        wheel.get("hashes", {}).get("sha256"), wheel.get("size"))
        if not package.get("sdist"):
            raise WheelhouseError(f"{name} {version} has no wheel for CPython {python} on {self.platform} and no "
                                  "sdist: pin a release of it that has a wheel")
        built = self.sdists.build(name, version)
        if built is None:
            raise WheelhouseError(f"{name} {version} has no wheel for CPython {python} on {self.platform}, and its "
                                  "sdist builds a wheel for this machine only: pin a release of it that has a wheel")
        return built

    def download(self, python: str, dists: list[Dist], dest: Path) -> None:
        download.download(dists, dest, python, self.platforms, self.index_args, self.launcher)
