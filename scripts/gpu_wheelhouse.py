"""An offline wheelhouse: every wheel the GPU stack needs, in one folder, for a node without internet.

    bash scripts/gpu_wheelhouse.sh --out DIR [--python 3.12] [--present FILE] [--part-mib N]
    bash scripts/gpu_wheelhouse.sh --join DIR

Build it where there is internet, on Linux x86_64 with a CPython X.Y that has pip (the one
running this script, else pythonX.Y on PATH: pip evaluates markers such as python_version
with the interpreter that runs it). pip's own resolver finds the whole closure, for CPython
X.Y (--python) on manylinux x86_64 with glibc 2.34 or newer (Ubuntu 22.04+, RHEL 9+), of

  * the GPU stack of vllm_source/stack.py: torch, vLLM, flashinfer-python (and
    flashinfer-cubin where the release pins it), verl without its [vllm] extra, transformers;
  * this package's dependencies and its dev, eval and wandb extras (pyproject.toml), its
    build requirements (for an editable install with no index) and pip;

then downloads every wheel the target lacks into DIR (pip download, each file checked
against the hash the resolver saw) and writes DIR/manifest.json: the vLLM release and
whether it is tested or accepted, where torch comes from, and per file its name, version,
sha256 and size, with the total.

--present FILE is a `pip freeze` of the target (e.g. a base image that already holds
torch). What it already has at the resolved version is skipped, and its pins are given to
the resolver as constraints (when they conflict with the stack, only torch's is kept, and
the manifest says so). A torch in FILE chooses the vLLM release (stack.release_for_torch:
torch 2.13 -> vLLM 0.28, torch 2.11 -> vLLM 0.24); a torch no release pins is refused.

--part-mib N cuts every file larger than N MiB into DIR/FILE.part000, .part001, ...
(for media or transfers with a size limit); --join DIR puts them back, checks every part
and every file against the manifest's sha256 and removes the parts. Then, on the target:

    pip install --no-index --find-links DIR --no-build-isolation <stack> -e .[dev,eval,wandb]

or `bash scripts/gpu_check.sh --wheelhouse DIR --out OUT`, which does that into .venv-gpu.
Bad input fails in one line naming the fix, before any work; exit 2. Standard library
only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import importlib.util
import json
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MANIFEST = "manifest.json"
FORMAT = 1
EXTRAS = ("dev", "eval", "wandb")  # what `pip install -e .[...]` from the wheelhouse asks for
GLIBC_NEWEST = 34  # manylinux_2_34: RHEL 9, Ubuntu 22.04 and newer (llguidance needs 2.31)
PLATFORMS = tuple(f"manylinux_2_{n}_x86_64" for n in range(GLIBC_NEWEST, 16, -1)) + (
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64")
DEFAULT_PYTHON = "3.12"  # Ubuntu 24.04's, the image's
MIB = 1 << 20
CHUNK = 4 * MIB


class WheelhouseError(Exception):
    """Bad input or a failed step: one line naming the problem and the fix."""


# ---------------------------------------------------------------------------------- the stack

def load_stack():
    """vllm_source/stack.py, loaded by path so that nothing else of the package is imported."""
    name = "_tandem_gpu_stack"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "vllm_source" / "stack.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def stack_requirements(stack, release) -> list[str]:
    """The GPU stack of one release, as pip requirement lines (verl without [vllm])."""
    reqs = [f"torch=={release.torch}", f"vllm=={release.vllm}", f"flashinfer-python=={release.flashinfer}"]
    if release.flashinfer_cubin:
        reqs.append(f"flashinfer-cubin=={release.flashinfer_cubin}")
    return reqs + [f"verl=={stack.VERL}", f"transformers=={stack.TRANSFORMERS_RESOLVED}"]


def read_pyproject(path: Path = REPO / "pyproject.toml") -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:
        raise WheelhouseError("reading pyproject.toml needs Python 3.11 or newer (tomllib): run with "
                              "GPU_WHEELHOUSE_LAUNCHER_PYTHON=python3.11 (or newer)") from None
    return tomllib.loads(path.read_text())


def build_requirements(pyproject: dict) -> list[str]:
    """What an editable install with no index and no build isolation needs first: the build backend, pip."""
    return unique(list(pyproject["build-system"]["requires"]) + ["pip"])


def project_requirements(pyproject: dict) -> list[str]:
    """This package's dependencies and the extras it is installed with from the wheelhouse."""
    project = pyproject["project"]
    extras = project.get("optional-dependencies", {})
    return unique(list(project["dependencies"]) + [r for name in EXTRAS for r in extras.get(name, [])])


def unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def normalize(name: str) -> str:
    """A distribution name as PEP 503 compares them (Foo_Bar -> foo-bar)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def base_version(version: str) -> str:
    """The version without its local label (2.11.0+cu130 -> 2.11.0)."""
    return version.split("+")[0]


def python_allowed(spec: str, python: str) -> bool:
    """Whether X.Y meets a requires-python made of >=, >, <=, <, ==, != clauses (X.Y compared as numbers)."""
    have = tuple(int(p) for p in python.split("."))
    ops = {">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b,
           "<": lambda a, b: a < b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        m = re.fullmatch(r"(>=|<=|==|!=|>|<)\s*(\d+(?:\.\d+)*)(?:\.\*)?", clause)
        if m is None:
            continue
        want = tuple(int(p) for p in m[2].split("."))[:2]
        if not ops[m[1]](have[:len(want)], want):
            return False
    return True


# ------------------------------------------------------------------------------- the target

@dataclass
class Target:
    """What the wheelhouse is for: the interpreter, what the machine already has, the release."""

    python: str
    present: dict[str, str]  # normalized name -> version, from --present
    release: object  # a stack.VllmRelease
    torch_source: str  # "present" (the target has it) or "wheelhouse"
    stack: list[str]  # the stack's requirement lines
    requirements: list[str]  # everything handed to the resolver
    build_requires: list[str] = field(default_factory=list)


def read_present(path: Path) -> dict[str, str]:
    """A `pip freeze`: normalized name -> version; editable and direct-URL lines have no version and are left out."""
    if not path.exists() or path.is_dir():
        raise WheelhouseError(f"--present {path}: no such file; write one on the target with "
                              "`python -m pip freeze > FILE`")
    present = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*===?\s*(\S+)", line)
        if m:
            present[normalize(m[1])] = m[2]
        elif normalize(re.split(r"[\s@=<>!~\[;]", line, maxsplit=1)[0]) == "torch":
            raise WheelhouseError(f"--present {path}: the torch line {line!r} has no version; write it as "
                                  "torch==VERSION (what `python -c 'import torch; print(torch.__version__)'` "
                                  "prints on the target)")
    return present


def choose_release(stack, present: dict[str, str], source: str):
    """The release the target's torch pins (or the tested one with no torch there), and where torch comes from."""
    torch = present.get("torch")
    if torch is None:
        return stack.TESTED, "wheelhouse"
    release = stack.release_for_torch(torch)
    if release is None:
        raise WheelhouseError(f"{source} has torch {torch}, which no vLLM release in vllm_source/stack.py pins "
                              f"({stack.describe()}): build for a target with one of those torch versions, or "
                              f"drop torch from the file to ship torch {stack.TESTED.torch} in the wheelhouse")
    local = torch.partition("+")[2]
    if local and local != release.torch_cuda:
        raise WheelhouseError(f"{source} has torch {torch}, a {local} build; vLLM {release.vllm} needs PyPI's "
                              f"{release.torch_cuda} build of torch {release.torch}: drop torch from the file "
                              "to ship that one in the wheelhouse")
    return release, "present"


def plan_target(python: str, present_file: Path | None, stack=None, pyproject: dict | None = None) -> Target:
    """Every check that needs no network: Python version, the --present file, the release."""
    if not re.fullmatch(r"3\.\d{1,2}", python):
        raise WheelhouseError(f"--python {python}: give the target's Python as X.Y, e.g. --python 3.12")
    stack = stack or load_stack()
    pyproject = pyproject if pyproject is not None else read_pyproject()
    wants = pyproject["project"].get("requires-python", "")
    if not python_allowed(wants, python):
        raise WheelhouseError(f"--python {python}: tandem-rlvr requires Python {wants} (pyproject.toml); "
                              "pick one in that range")
    present = read_present(present_file) if present_file else {}
    release, torch_source = choose_release(stack, present, f"--present {present_file}")
    stack_reqs = stack_requirements(stack, release)
    build = build_requirements(pyproject)
    return Target(python, present, release, torch_source, stack_reqs,
                  unique(stack_reqs + project_requirements(pyproject) + build), build)


# ---------------------------------------------------------------------------------- pip

@dataclass(frozen=True)
class Dist:
    """One resolved distribution and the file pip would install it from."""

    name: str
    version: str
    file: str
    url: str
    sha256: str | None


class ResolveError(WheelhouseError):
    """pip's resolver found no closure."""


def resolver_python(python: str) -> str:
    """A CPython X.Y on Linux x86_64 with pip, to run the resolver: pip evaluates environment markers
    (python_version > "3.11", platform_system == "Linux") with the interpreter that runs it, whatever
    --python-version and --platform say."""
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        raise WheelhouseError(f"this machine is {platform.system()} {platform.machine()}: pip evaluates the "
                              "stack's platform markers where it runs, so build the wheelhouse on Linux x86_64 "
                              "(a container will do)")
    if f"{sys.version_info.major}.{sys.version_info.minor}" == python and sys.implementation.name == "cpython":
        return sys.executable
    found = shutil.which(f"python{python}")
    probe = "import sys, pip; print('%d.%d %s' % (sys.version_info[0], sys.version_info[1], sys.implementation.name))"
    try:
        res = found and subprocess.run([found, "-c", probe], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        res = None
    if not res or res.returncode != 0 or res.stdout.split() != [python, "cpython"]:
        raise WheelhouseError(f"--python {python}: resolving for Python {python} needs a CPython {python} with pip "
                              f"here (pip reads markers such as python_version from the interpreter that runs it), "
                              f"and python{python} on PATH is {'not one' if found else 'missing'}: install it, or "
                              f"run with GPU_WHEELHOUSE_LAUNCHER_PYTHON=/path/to/python{python}")
    return found


class Pip:
    """pip of a CPython X.Y (`resolver_python`), for the target's interpreter and platforms.

    Resolving takes two passes. The first, for this machine and with sdists allowed (binaries
    preferred), finds what has no wheel at all (antlr4-python3-runtime 4.9.3, which hydra-core
    1.3 pins, is one); each such sdist is built here into a wheel, kept when it is pure Python.
    The second pass, wheels only for the target's tags, sees those wheels too; without them pip
    would quietly fall back to old releases that need no sdist (hydra-core 0.11).
    `index_args` go to every call (tests use ["--no-index", "--find-links", DIR]).
    """

    def __init__(self, index_args: list[str] | None = None, executable: str = sys.executable,
                 build_isolation: bool = True):
        self.index_args, self.executable, self.build_isolation = list(index_args or []), executable, build_isolation
        self._built = tempfile.TemporaryDirectory(prefix="wheelhouse-built-")
        self.built = Path(self._built.name)  # wheels built from sdists, a find-links folder for both passes
        self.built_from_sdist: list[Dist] = []
        self.host_versions: dict[str, str] = {}  # normalized name -> version, from the first pass

    def target_args(self, python: str) -> list[str]:
        abi = "cp" + python.replace(".", "")
        return ["--only-binary=:all:", "--python-version", python, "--implementation", "cp", "--abi", abi,
                *(arg for p in PLATFORMS for arg in ("--platform", p))]

    def report(self, requirements: list[str], constraints: list[str], extra: list[str]) -> dict:
        """pip's installation report for a dry run with `extra` options."""
        with tempfile.TemporaryDirectory(prefix="wheelhouse-resolve-") as tmp:
            reqs, cons, report = Path(tmp, "requirements.txt"), Path(tmp, "constraints.txt"), Path(tmp, "report.json")
            reqs.write_text("\n".join(requirements) + "\n")
            cons.write_text("\n".join(constraints) + "\n")
            cmd = [self.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--quiet",
                   "--report", str(report), *extra, *self.isolation(), *self.index_args,
                   "--find-links", str(self.built), "-r", str(reqs), "-c", str(cons)]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0 or not report.is_file():
                raise ResolveError(last_error(res.stderr, res.returncode))
            return json.loads(report.read_text())

    def isolation(self) -> list[str]:
        return [] if self.build_isolation else ["--no-build-isolation"]

    def resolve(self, python: str, requirements: list[str], constraints: list[str]) -> list[Dist]:
        host = dists_from_report(self.report(requirements, constraints, ["--prefer-binary"]), wheels_only=False)
        self.host_versions = {normalize(d.name): d.version for d in host}
        for dist in host:
            if not dist.file.endswith(".whl"):
                self.build_wheel(dist)
        with tempfile.TemporaryDirectory(prefix="wheelhouse-target-") as tmp:
            extra = ["--target", str(Path(tmp, "target")), *self.target_args(python)]
            return dists_from_report(self.report(requirements, constraints, extra))

    def build_wheel(self, dist: Dist) -> None:
        """A wheel from `dist`'s sdist into self.built; kept only when pure Python (any platform)."""
        before = set(self.built.iterdir())
        cmd = [self.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", *self.isolation(), *self.index_args,
               "--wheel-dir", str(self.built), f"{dist.name}=={dist.version}"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise WheelhouseError(f"{dist.name} {dist.version} has no wheel and building one from its sdist failed "
                                  f"({last_error(res.stderr, res.returncode)}): fix the build here, or pin a "
                                  "release of it that has a wheel")
        for path in set(self.built.iterdir()) - before:
            if path.name.endswith("-none-any.whl"):
                self.built_from_sdist.append(Dist(dist.name, dist.version, path.name, path.as_uri(), None))
            else:  # built for this machine only: the target pass must find a manylinux wheel instead
                path.unlink()
        print(f"gpu_wheelhouse: {dist.name} {dist.version} has no wheel; built one from its sdist", flush=True)

    def download(self, python: str, dists: list[Dist], dest: Path) -> None:
        """Each file the resolver chose, with --no-deps; pip checks the hashes the resolver saw."""
        hashed = all(d.sha256 for d in dists)
        lines = [f"{d.name}=={d.version}" + (f" --hash=sha256:{d.sha256}" if hashed else "") for d in dists]
        with tempfile.TemporaryDirectory(prefix="wheelhouse-download-") as tmp:
            reqs = Path(tmp, "requirements.txt")
            reqs.write_text("\n".join(lines) + "\n")
            cmd = [self.executable, "-m", "pip", "download", "--no-deps", "--progress-bar", "off",
                   *(["--require-hashes"] if hashed else []), *self.target_args(python), *self.index_args,
                   "--find-links", str(self.built), "--dest", str(dest), "-r", str(reqs)]
            res = subprocess.run(cmd, stderr=subprocess.PIPE, text=True)  # its "Saved ..." lines show progress
            if res.returncode != 0:
                raise WheelhouseError(f"pip download failed: {last_error(res.stderr, res.returncode)}; "
                                      "run again (what was downloaded is kept)")


def last_error(stderr: str, rc: int) -> str:
    errors = [line.removeprefix("ERROR: ").strip() for line in stderr.splitlines() if line.startswith("ERROR:")]
    return (errors[-1] if errors else f"pip exited {rc}")[:400]


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
        name = urllib.parse.unquote(urllib.parse.urlparse(url).path.rsplit("/", 1)[-1])
        out.append(Dist(meta["name"], meta["version"], name, url, sha))
    return out


# ------------------------------------------------------------------------------- building

def check_out_dir(out: Path) -> list[Path]:
    """A new or empty folder, or an earlier (unsplit) build of one: its wheels, to reuse."""
    if out.exists() and not out.is_dir():
        raise WheelhouseError(f"--out {out} is a file: name a new or empty folder")
    if not out.exists():
        return []
    other = [p.name for p in out.iterdir() if not (p.name.endswith(".whl") or p.name == MANIFEST)]
    if other:
        raise WheelhouseError(f"--out {out} holds other files ({', '.join(sorted(other)[:3])}): name a new or "
                              "empty folder (an earlier unsplit wheelhouse there is reused)")
    return sorted(out.glob("*.whl"))


def resolve(pip: Pip, target: Target) -> tuple[list[Dist], str]:
    """The closure; with the present pins as constraints, else with torch's alone."""
    constraints = [f"{name}=={base_version(v)}" for name, v in sorted(target.present.items())]
    torch_only = [c for c in constraints if c.startswith("torch==")]
    try:
        return pip.resolve(target.python, target.requirements, constraints), "all" if constraints else "none"
    except ResolveError as e:
        if len(torch_only) == len(constraints):
            raise WheelhouseError(f"pip found no set of wheels for the stack on cp{target.python.replace('.', '')} "
                                  f"manylinux x86_64: {e}") from None
        print(f"gpu_wheelhouse: the --present pins conflict with the stack ({e}); resolving with torch's "
              "alone (the target's other packages are replaced where they differ)", flush=True)
    try:
        return pip.resolve(target.python, target.requirements, torch_only), "torch" if torch_only else "none"
    except ResolveError as e:
        raise WheelhouseError(f"pip found no set of wheels for the stack: {e}") from None


def check_torch_build(dists: list[Dist], release) -> None:
    """A torch with a local label other than the release's CUDA one (e.g. +cpu from a configured index) is refused."""
    for d in dists:
        local = d.version.partition("+")[2]
        if normalize(d.name) == "torch" and local and local != release.torch_cuda:
            raise WheelhouseError(f"pip chose torch {d.version} ({d.url}), a {local} build: an index or find-links "
                                  "in pip's configuration (pip config list) serves it; remove it there")


def differs_from_host(dists: list[Dist], host_versions: dict[str, str]) -> dict[str, dict]:
    """The releases the target pass chose that differ from the first (this machine's, sdists allowed) pass."""
    return {d.name: {"target": d.version, "host": host_versions[normalize(d.name)]} for d in dists
            if normalize(d.name) in host_versions and host_versions[normalize(d.name)] != d.version}


def satisfied(dist: Dist, present: dict[str, str]) -> bool:
    have = present.get(normalize(dist.name))
    return have is not None and base_version(have) == base_version(dist.version)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def file_entry(out: Path, dist: Dist) -> dict:
    path = out / dist.file
    if not path.is_file():
        raise WheelhouseError(f"pip download did not leave {dist.file} in {out}: run again")
    sha = sha256_of(path)
    if dist.sha256 and sha != dist.sha256:
        path.unlink()
        raise WheelhouseError(f"{dist.file} downloaded with sha256 {sha[:12]}..., the index says "
                              f"{dist.sha256[:12]}...: run again (the file was removed)")
    return {"name": dist.name, "version": dist.version, "file": dist.file, "sha256": sha, "bytes": path.stat().st_size}


def split(path: Path, part_bytes: int) -> list[dict]:
    """Cut `path` into PATH.part000, .part001, ... of `part_bytes` each (the last shorter); remove it."""
    parts = []
    with open(path, "rb") as src:
        while True:
            part = path.with_name(f"{path.name}.part{len(parts):03d}")
            digest, size = hashlib.sha256(), 0
            with open(part, "wb") as dst:
                while size < part_bytes and (block := src.read(min(CHUNK, part_bytes - size))):
                    dst.write(block)
                    digest.update(block)
                    size += len(block)
            if size == 0:
                part.unlink()
                break
            parts.append({"file": part.name, "sha256": digest.hexdigest(), "bytes": size})
    path.unlink()
    return parts


def write_manifest(out: Path, manifest: dict) -> Path:
    path = out / MANIFEST
    tmp = path.with_name(MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    tmp.replace(path)
    return path


def build(out: Path, target: Target, pip: Pip, part_bytes: int | None = None) -> dict:
    """Resolve, download what the target lacks, split, and write the manifest; returns it."""
    earlier = check_out_dir(out)
    print(f"gpu_wheelhouse: resolving {len(target.requirements)} requirements for CPython {target.python}, "
          f"manylinux x86_64 (glibc 2.{GLIBC_NEWEST}+), vLLM {target.release.vllm} ...", flush=True)
    dists, constrained = resolve(pip, target)
    check_torch_build(dists, target.release)
    differs = differs_from_host(dists, getattr(pip, "host_versions", {}))
    if differs:
        print("gpu_wheelhouse: note: with wheels only, for the target, pip chose other releases than for this "
              "machine with sdists allowed: " + ", ".join(f"{n} {v['target']} (here {v['host']})"
                                                          for n, v in differs.items()), flush=True)
    wanted = [d for d in dists if not satisfied(d, target.present)]
    skipped = [d for d in dists if satisfied(d, target.present)]
    out.mkdir(parents=True, exist_ok=True)
    stale = [p for p in earlier if p.name not in {d.file for d in wanted}]
    for path in stale:
        path.unlink()
    print(f"gpu_wheelhouse: downloading {len(wanted)} wheels ({len(skipped)} already on the target) into {out}"
          + (f"; removed {len(stale)} wheels of an earlier build" if stale else ""), flush=True)
    if wanted:
        pip.download(target.python, wanted, out)
    files = sorted((file_entry(out, d) for d in wanted), key=lambda e: normalize(e["name"]))
    for entry in files:
        if part_bytes and entry["bytes"] > part_bytes:
            entry["parts"] = split(out / entry["file"], part_bytes)
    manifest = {
        "format": FORMAT,
        "created_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "vllm": target.release.vllm, "release_status": target.release.status, "torch": target.release.torch,
        "torch_cuda": target.release.torch_cuda, "torch_source": target.torch_source,
        "python": target.python, "platform": list(PLATFORMS),
        "stack": target.stack, "build_requires": target.build_requires, "extras": list(EXTRAS),
        "requirements": target.requirements, "present_constraints": constrained,
        "part_bytes": part_bytes,
        "files": files, "file_count": len(files), "total_bytes": sum(e["bytes"] for e in files),
        "skipped_present": [{"name": d.name, "version": target.present[normalize(d.name)]} for d in skipped],
        "built_from_sdist": sorted(f"{d.name}=={d.version}" for d in getattr(pip, "built_from_sdist", [])
                                   if d.file in {e["file"] for e in files}),
        "differs_from_host_resolve": differs,
    }
    write_manifest(out, manifest)
    return manifest


# -------------------------------------------------------------------------- reading, joining

def load_manifest(folder: Path) -> dict:
    """DIR/manifest.json, checked for the fields a join and an install read."""
    if not folder.is_dir():
        raise WheelhouseError(f"no wheelhouse at {folder}: build one with bash scripts/gpu_wheelhouse.sh --out {folder}")
    path = folder / MANIFEST
    if not path.is_file():
        raise WheelhouseError(f"{folder} has no {MANIFEST}: not a wheelhouse of scripts/gpu_wheelhouse.sh; "
                              f"build one with bash scripts/gpu_wheelhouse.sh --out DIR")
    try:
        manifest = json.loads(path.read_text())
        problem = manifest_problem(manifest)
    except ValueError as e:
        problem = str(e)
    if problem:
        raise WheelhouseError(f"{path} is not a wheelhouse manifest ({problem}): rebuild it with "
                              "bash scripts/gpu_wheelhouse.sh --out DIR")
    return manifest


def manifest_problem(manifest) -> str | None:
    """What makes `manifest` unreadable for a join or an install, or None."""
    if not isinstance(manifest, dict):
        return "not a JSON object"
    if manifest.get("format") != FORMAT:
        return f"format {manifest.get('format')!r}, this script reads {FORMAT}"
    for key in ("vllm", "python", "stack", "build_requires", "extras", "torch_source", "skipped_present", "files"):
        if key not in manifest:
            return f"no {key!r}"
    for entry in manifest["files"]:
        if not isinstance(entry, dict) or any(k not in entry for k in ("name", "version", "file", "sha256", "bytes")):
            return f"a file entry without name, version, file, sha256 or bytes: {entry!r}"[:200]
        names = [entry["file"]] + [p.get("file", "") for p in entry.get("parts") or []]
        if any(not n or "/" in n or n.startswith(".") for n in names):
            return f"a file name that is not a plain name in the folder: {entry['file']!r}"
    return None


def check_complete(folder: Path, manifest: dict) -> None:
    """Every file, or every part of it, is there at its size (cheap: no hashing)."""
    for entry in manifest["files"]:
        whole = folder / entry["file"]
        if whole.is_file() and whole.stat().st_size == entry["bytes"]:
            continue
        parts = entry.get("parts") or []
        if not parts:
            raise WheelhouseError(_missing_or_short(whole, entry["bytes"], entry["file"]))
        for i, part in enumerate(parts):
            path = folder / part["file"]
            if not (path.is_file() and path.stat().st_size == part["bytes"]):
                raise WheelhouseError(_missing_or_short(path, part["bytes"], f"part {i + 1} of {len(parts)} of "
                                                                             f"{entry['file']}"))


def _missing_or_short(path: Path, want: int, what: str) -> str:
    fix = "copy it again from the machine that built the wheelhouse"
    if not path.is_file():
        return f"{path} is missing ({what}): {fix}"
    return f"{path} has {path.stat().st_size} bytes, the manifest says {want} ({what}): {fix}"


def join_one(folder: Path, entry: dict) -> None:
    """Concatenate the parts into FILE, checking each part's and the whole file's sha256; remove the parts."""
    whole, tmp = folder / entry["file"], folder / (entry["file"] + ".joining")
    digest = hashlib.sha256()
    try:
        with open(tmp, "wb") as dst:
            for i, part in enumerate(entry["parts"]):
                part_digest = hashlib.sha256()
                with open(folder / part["file"], "rb") as src:
                    while block := src.read(CHUNK):
                        dst.write(block)
                        part_digest.update(block)
                        digest.update(block)
                if part_digest.hexdigest() != part["sha256"]:
                    raise WheelhouseError(f"{folder / part['file']} (part {i + 1} of {len(entry['parts'])} of "
                                          f"{entry['file']}) differs from the manifest's sha256: copy it again from "
                                          "the machine that built the wheelhouse")
        if digest.hexdigest() != entry["sha256"]:
            raise WheelhouseError(f"{whole} joined from its parts differs from the manifest's sha256: rebuild the "
                                  "wheelhouse with bash scripts/gpu_wheelhouse.sh --out DIR")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(whole)
    for part in entry["parts"]:
        (folder / part["file"]).unlink(missing_ok=True)


def whole_matches(folder: Path, entry: dict) -> bool:
    path = folder / entry["file"]
    return path.is_file() and path.stat().st_size == entry["bytes"] and sha256_of(path) == entry["sha256"]


def verify_one(folder: Path, entry: dict) -> None:
    path = folder / entry["file"]
    if sha256_of(path) != entry["sha256"]:
        raise WheelhouseError(f"{path} differs from the manifest's sha256: copy it again from the machine that "
                              "built the wheelhouse, or rebuild it with bash scripts/gpu_wheelhouse.sh --out DIR")
    for part in entry.get("parts") or []:  # left over from a join that stopped after the rename
        (folder / part["file"]).unlink(missing_ok=True)


def join(folder: Path) -> dict:
    """Put split files back and check every file against the manifest; returns the manifest."""
    manifest = load_manifest(folder)
    check_complete(folder, manifest)
    for entry in manifest["files"]:
        parts = entry.get("parts") or []
        if parts and all((folder / p["file"]).is_file() for p in parts) and not whole_matches(folder, entry):
            join_one(folder, entry)
        else:
            verify_one(folder, entry)
    for leftover in folder.glob("*.joining"):
        leftover.unlink()
    return manifest


# ------------------------------------------------------------------------------------ CLI

class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        raise WheelhouseError(f"{message} (see --help)")


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = OneLineParser(prog="scripts/gpu_wheelhouse.sh", description=__doc__.splitlines()[0],
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="\n".join(__doc__.splitlines()[2:]))
    mode = ap.add_mutually_exclusive_group(required=True)
    mode.add_argument("--out", type=Path, metavar="DIR",
                      help="build the wheelhouse into DIR (new, empty, or an earlier unsplit build to reuse)")
    mode.add_argument("--join", type=Path, metavar="DIR",
                      help="put the split files of the wheelhouse DIR back and check every file's sha256")
    ap.add_argument("--python", metavar="X.Y",
                    help="the target machine's Python (default 3.12, Ubuntu 24.04's and the image's)")
    ap.add_argument("--present", type=Path, metavar="FILE",
                    help="`pip freeze` of the target: skip what it already has at the resolved version; its "
                         "torch chooses the vLLM release (torch 2.13 -> 0.28, torch 2.11 -> 0.24)")
    ap.add_argument("--part-mib", type=int, metavar="N",
                    help="cut every file larger than N MiB into FILE.part000, .part001, ... (--join undoes it)")
    args = ap.parse_args(argv)
    if args.join and (args.present or args.part_mib is not None or args.python):
        raise WheelhouseError("--join takes only the wheelhouse folder: drop --python, --present and --part-mib")
    if args.part_mib is not None and args.part_mib < 1:
        raise WheelhouseError(f"--part-mib {args.part_mib}: give a size of at least 1 MiB")
    args.python = args.python or DEFAULT_PYTHON
    return args


def summary(out: Path, manifest: dict) -> str:
    torch = "on the target" if manifest["torch_source"] == "present" else "in the wheelhouse"
    parts = sum(len(e.get("parts") or []) for e in manifest["files"])
    return (f"wheelhouse: {manifest['file_count']} files, {manifest['total_bytes'] / 2**30:.2f} GiB"
            + (f" ({parts} parts)" if parts else "")
            + f", vLLM {manifest['vllm']} ({manifest['release_status']}), torch {manifest['torch']} {torch}, "
            f"{len(manifest['skipped_present'])} present on the target skipped -> {out / MANIFEST}")


def main(argv: list[str] | None = None, pip: Pip | None = None) -> int:
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        if args.join:
            manifest = join(args.join.resolve())
            print(f"wheelhouse {args.join}: {manifest['file_count']} files joined and checked against "
                  f"{MANIFEST} (sha256); install with pip install --no-index --find-links {args.join}")
            return 0
        target = plan_target(args.python, args.present)
        out = args.out.resolve()
        check_out_dir(out)
        pip = pip or Pip(executable=resolver_python(args.python))
        manifest = build(out, target, pip, args.part_mib * MIB if args.part_mib else None)
    except WheelhouseError as e:
        print(f"gpu_wheelhouse: {e}", file=sys.stderr)
        return 2
    print(summary(out, manifest))
    return 0


if __name__ == "__main__":
    sys.exit(main())
