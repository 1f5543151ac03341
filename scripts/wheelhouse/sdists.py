"""A pure wheel from a package that publishes only an sdist (antlr4-python3-runtime 4.9.3, which
hydra-core 1.3 pins, is one), so that the target can install it with no index.

The wheel is built here, with this machine's pip; it serves the target only when it is pure
Python (`-none-any`). A wheel built for this machine's platform is dropped: the target needs
a manylinux wheel of that package instead, or the resolve is refused.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

from .basics import Dist, WheelhouseError, last_error


class SdistBuilder:
    """Builds into one find-links folder (`built`) that the resolvers and the download read too."""

    def __init__(self, index_args: list[str] | None = None, executable: str = sys.executable,
                 build_isolation: bool = True):
        self.index_args, self.executable, self.build_isolation = list(index_args or []), executable, build_isolation
        self._built = tempfile.TemporaryDirectory(prefix="wheelhouse-built-")
        self.built = Path(self._built.name)
        self.built_from_sdist: list[Dist] = []

    def isolation(self) -> list[str]:
        return [] if self.build_isolation else ["--no-build-isolation"]

    def build(self, name: str, version: str) -> Dist | None:
        """The pure wheel of name==version built from its sdist, or None when it builds for this machine only."""
        before = set(self.built.iterdir())
        cmd = [self.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", *self.isolation(), *self.index_args,
               "--wheel-dir", str(self.built), f"{name}=={version}"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise WheelhouseError(f"{name} {version} has no wheel and building one from its sdist failed "
                                  f"({last_error(res.stderr, res.returncode)}): fix the build here, or pin a "
                                  "release of it that has a wheel")
        print(f"gpu_wheelhouse: {name} {version} has no wheel; built one from its sdist", flush=True)
        pure = None
        for path in set(self.built.iterdir()) - before:
            if path.name.endswith("-none-any.whl"):
                pure = Dist(name, version, path.name, path.as_uri(), None, path.stat().st_size)
                self.built_from_sdist.append(pure)
            else:
                path.unlink()
        return pure
