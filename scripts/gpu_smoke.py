"""A device smoke that fits a short lease: one H100/H200 with only PyTorch (CUDA 13), no internet.

    bash scripts/gpu_smoke.sh --prepare [--wheels DIR]           # here, with PyPI: fill the wheel folder
    bash scripts/gpu_smoke.sh [--wheels DIR] [--out DIR] [--budget S]   # on the GPU machine
    bash scripts/gpu_smoke.sh --dry-run [--out DIR]               # on a CPU: everything that needs no GPU

The project's pure-Python dependencies travel as wheels (scripts/gpu_smoke_wheels.txt: CPython 3.12,
manylinux x86_64, at most 60 MiB; default folder shared/wheels-gpu-smoke/). On the GPU machine the
smoke checks them (sha256, size, tags), installs them with `pip install --no-index --no-deps
--target WORK/site` and runs every step with WORK/site and this checkout on PYTHONPATH, over the
machine's torch: a venv made from the image's Python (itself a venv) with --system-site-packages
would see the base interpreter's packages, not that torch. Steps, in order, each in its own
process with its own timeout inside one time budget (default 450 s); a failing step never stops
the others:

  driver        nvidia-smi's driver and CUDA: R580+ (or the forward-compatibility package) for cu130
  wheels        the wheel folder against its manifest and the list, then installed (GPU) or only
                checked with pip's cp312 target install (--dry-run)
  machine       torch, CUDA, the GPU's name, capability and memory, the versions the steps import
  engine_fp32   the embedded tandem engine (tandem.reference.engine.TandemEngine) on CUDA equal to CPU at fp32:
                greedy tokens and authorship masks of the tiny zoo (tandem_app/zoo.py), every decoding mode
  handoff_bf16  tandem-rlvr eval-handoff of two tiny models on a small JSONL at bf16 on the GPU, with its
                accuracy (pass@1)
  demo_quick    tandem-rlvr demo --quick with SFT and RL on CUDA (the demo's sft.device and train.device;
                its evaluation stays on the CPU), with its wall time and accuracies

Writes OUT/gpu_smoke.json (default runs/gpu-smoke): the machine (GPU, capability, driver, torch
and CUDA versions), each step's status (passed / failed / skipped), wall time, timeout, reason,
details and log tail, the wheels (files, bytes), what gpu_check proves and does not yet
(scripts/gpu_checks/proofs.py) and one summary line, which it also prints. --dry-run runs the
wheel check, the machine probe, the CPU half of each comparison at tiny sizes and the JSON, and
lists in would_run_on_gpu what it would run on a GPU. Exit 0 when no step failed, 1 when one
did, 2 (one line) for bad arguments or a failed --prepare. Standard library only: it runs
before anything is installed. Never run on a GPU yet.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from script_packages import load_package  # noqa: E402

load_package("_tandem_gpu_check", REPO / "scripts" / "gpu_checks")
from _tandem_gpu_check import proofs  # noqa: E402
from _tandem_gpu_check.machine import FP32_ENV, detect_gpus, driver_problem, forward_compat_driver  # noqa: E402

MIB = 1 << 20
LIMIT_BYTES = 60 * MIB
WHEEL_LIST = REPO / "scripts" / "gpu_smoke_wheels.txt"
DEFAULT_WHEELS = REPO / "shared" / "wheels-gpu-smoke"
MANIFEST = "manifest.json"
PYTHON = "3.12"
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_27_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64",
             "manylinux1_x86_64")
NOT_CARRIED = ("numpy", "sympy", "mpmath")  # a PyTorch install has them (see the wheel list's header)
NEED_CUDA = "13.0"  # every stack of this project, and the lent machines' torch, is cu130
PROBE = REPO / "scripts" / "gpu_smoke_probe.py"
DEFAULT_BUDGET = 450.0  # seconds: the whole smoke, install included, inside an 8-minute lease step
MIN_STEP = 15.0  # a step given less than this is skipped: "time budget spent"

# name -> (timeout s, needs a GPU for its real half, what it runs)
STEPS = {
    "driver": (30, True, "nvidia-smi: the driver and its CUDA against cu130 (R580+, or forward compatibility)"),
    "wheels": (120, False, "the wheel folder checked (manifest, sha256, 60 MiB, cp312 tags) and installed with "
                           "pip install --no-index --no-deps --target WORK/site"),
    "machine": (90, False, f"python {PROBE.relative_to(REPO)} machine --device cuda"),
    "engine_fp32": (150, True, f"python {PROBE.relative_to(REPO)} engine --device cuda: CUDA vs CPU at fp32"),
    "handoff_bf16": (150, True, f"python {PROBE.relative_to(REPO)} handoff --device cuda: eval-handoff at bf16"),
    "demo_quick": (330, True, f"python {PROBE.relative_to(REPO)} demo --device cuda: the quick demo on CUDA"),
}


class UsageError(Exception):
    """Bad arguments or a failed --prepare: one line, exit 2."""


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"gpu_smoke: {message} (see --help)")


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = OneLineParser(prog="scripts/gpu_smoke.sh", description=__doc__.splitlines()[0],
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="\n".join(__doc__.splitlines()[2:]) + "\n\n" + proofs.help_text())
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="on a CPU: run what needs no GPU, list the rest")
    mode.add_argument("--prepare", action="store_true", help="download the wheels of scripts/gpu_smoke_wheels.txt "
                                                             "into --wheels (needs PyPI) and write its manifest")
    ap.add_argument("--wheels", type=Path, default=DEFAULT_WHEELS, help="the wheel folder (default: %(default)s)")
    ap.add_argument("--out", type=Path, default=REPO / "runs" / "gpu-smoke", help="OUT/gpu_smoke.json (default: "
                                                                                  "runs/gpu-smoke)")
    ap.add_argument("--work", type=Path, default=None, help="models, runs and the installed wheels (default: a "
                                                            "temporary folder, removed at the end)")
    ap.add_argument("--python", default=None, help="the interpreter with torch that runs the steps (default: this "
                                                   "one; with --dry-run the checkout's .venv where it has one)")
    ap.add_argument("--budget", type=float, default=DEFAULT_BUDGET, help="seconds for the whole smoke (default: "
                                                                         "%(default)s)")
    ap.add_argument("--only", nargs="+", choices=list(STEPS), default=None, metavar="STEP",
                    help=f"run only these steps of: {', '.join(STEPS)}")
    args = ap.parse_args(argv)
    if args.budget <= 0:
        raise UsageError("gpu_smoke: --budget must be positive seconds")
    if args.python is None:
        venv = REPO / ".venv" / "bin" / "python"
        args.python = str(venv) if args.dry_run and venv.is_file() else sys.executable
    return args


# ------------------------------------------------------------------ the wheel list and folder

def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_list(path: Path | None = None) -> dict[str, tuple[str, bool]]:
    """The wheel list (default scripts/gpu_smoke_wheels.txt): normalized name -> (version, built here from an sdist)."""
    pins = {}
    for line in (path or WHEEL_LIST).read_text().splitlines():
        text = line.split("#", 1)[0].strip()
        if text:
            name, version = text.split("==")
            pins[normalize(name)] = (version.strip(), "# sdist" in line)
    return pins


def project_requirements() -> list[str]:
    """What the steps need from pyproject.toml: its dependencies (torch comes with the machine) and math-verify
    (the eval extra's grader), as normalized names."""
    text = (REPO / "pyproject.toml").read_text()
    deps = re.search(r"^dependencies = \[(.*?)^\]", text, re.S | re.M).group(1)
    names = [normalize(re.split(r"[\s<>=!~\[;]", r, maxsplit=1)[0]) for r in re.findall(r'"([^"]+)"', deps)]
    return [n for n in names if n != "torch"] + ["math-verify"]


def list_problems(pins: dict) -> list[str]:
    """What the wheel list lacks of the project's requirements (less NOT_CARRIED), or carries of NOT_CARRIED."""
    missing = [n for n in project_requirements() if n not in pins and n not in NOT_CARRIED]
    carried = [n for n in NOT_CARRIED if n in pins]
    return ([f"scripts/gpu_smoke_wheels.txt lacks {', '.join(missing)}"] if missing else []) + \
        ([f"scripts/gpu_smoke_wheels.txt carries {', '.join(carried)}, which the machine's torch brings"]
         if carried else [])


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def wheel_name_version(file: str) -> tuple[str, str]:
    parts = file.split("-")
    return normalize(parts[0]), parts[1]


def installable(file: str) -> bool:
    """CPython 3.12 on manylinux x86_64 installs this wheel (its tags; scripts/wheelhouse/tags.py)."""
    tags = load_tags()
    want = set(tags.supported_tags(PYTHON, PLATFORMS))
    return bool(tags.wheel_tags(file) & want)


def load_tags():
    import importlib.util

    if "_tandem_smoke_tags" not in sys.modules:
        spec = importlib.util.spec_from_file_location("_tandem_smoke_tags", REPO / "scripts" / "wheelhouse" / "tags.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules["_tandem_smoke_tags"] = module
    return sys.modules["_tandem_smoke_tags"]


def check_folder(folder: Path, pins: dict) -> tuple[dict, list[str]]:
    """The folder's summary and its problems (each one line with the fix); [] when it can serve."""
    fix = f"bash scripts/gpu_smoke.sh --prepare --wheels {folder}"
    info = {"dir": str(folder), "present": folder.is_dir(), "limit_bytes": LIMIT_BYTES, "not_carried": list(NOT_CARRIED)}
    if not (folder / MANIFEST).is_file():
        return info, [f"no wheel folder with a {MANIFEST} at {folder}: {fix}"]
    try:
        manifest = json.loads((folder / MANIFEST).read_text())
        files = manifest["files"]
    except (ValueError, KeyError, TypeError):
        return info, [f"{folder / MANIFEST} is not the smoke's manifest: {fix}"]
    total = sum(e["bytes"] for e in files)
    info.update(files=len(files), total_bytes=total, total_mib=round(total / MIB, 1), python=manifest.get("python"))
    problems = []
    have = {e["name"]: e["version"] for e in files}
    if have != {n: v for n, (v, _) in pins.items()}:
        differ = sorted(set(have.items()) ^ {(n, v) for n, (v, _) in pins.items()})
        problems.append(f"the folder differs from scripts/gpu_smoke_wheels.txt ({', '.join(f'{n}=={v}' for n, v in differ[:4])}"
                        f"{' ...' if len(differ) > 4 else ''}): {fix}")
    if total > LIMIT_BYTES:
        problems.append(f"the wheels hold {total / MIB:.1f} MiB, over the {LIMIT_BYTES // MIB} MiB limit")
    for e in files:
        path = folder / e["file"]
        if not path.is_file():
            problems.append(f"{e['file']} is missing: {fix}")
        elif path.stat().st_size != e["bytes"] or sha256_of(path) != e["sha256"]:
            problems.append(f"{e['file']} differs from the manifest's sha256: {fix}")
        elif not installable(e["file"]):
            problems.append(f"{e['file']} is not for CPython {PYTHON} on manylinux x86_64: {fix}")
    return info, problems


def prepare(folder: Path) -> str:
    """Download (or build, for an sdist-only release) every wheel of the list into `folder`; the manifest; one line."""
    pins = read_list()
    problems = list_problems(pins)
    if problems:
        raise UsageError(f"gpu_smoke: {problems[0]}")
    folder.mkdir(parents=True, exist_ok=True)
    target = ["--only-binary=:all:", "--python-version", PYTHON, "--implementation", "cp",
              *(a for p in PLATFORMS for a in ("--platform", p))]
    binary = [f"{n}=={v}" for n, (v, sdist) in pins.items() if not sdist]
    built = [f"{n}=={v}" for n, (v, sdist) in pins.items() if sdist]
    steps = [[sys.executable, "-m", "pip", "download", "--no-deps", "--progress-bar", "off", *target, "-d", str(folder),
              *binary]]
    if built:
        steps.append([sys.executable, "-m", "pip", "wheel", "--no-deps", "--progress-bar", "off", "-w", str(folder),
                      *built])
    for cmd in steps:
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            last = [line for line in res.stderr.splitlines() if line.strip()][-1:] or [f"exit {res.returncode}"]
            raise UsageError(f"gpu_smoke: --prepare: {cmd[3]} failed: {last[0].strip()}")
    entries, total = write_manifest(folder, pins)
    info, problems = check_folder(folder, pins)
    if problems:
        raise UsageError(f"gpu_smoke: --prepare: {problems[0]}")
    return f"gpu_smoke: {len(entries)} wheels, {total:,} bytes ({total / MIB:.1f} MiB of {LIMIT_BYTES // MIB}) in {folder}"


def write_manifest(folder: Path, pins: dict) -> tuple[list[dict], int]:
    """FOLDER/manifest.json over the folder's wheels of the list (an earlier list's wheels are removed)."""
    entries = []
    for path in sorted(folder.glob("*.whl")):
        name, version = wheel_name_version(path.name)
        if pins.get(name, (None,))[0] != version:
            path.unlink()
            continue
        entries.append({"name": name, "version": version, "file": path.name, "sha256": sha256_of(path),
                        "bytes": path.stat().st_size})
    total = sum(e["bytes"] for e in entries)
    (folder / MANIFEST).write_text(json.dumps({"format": 1, "python": PYTHON, "platforms": list(PLATFORMS),
                                               "files": entries, "total_bytes": total,
                                               "not_carried": list(NOT_CARRIED)}, indent=2) + "\n")
    return entries, total


# ------------------------------------------------------------------ running the steps

class Step:
    def __init__(self, name: str, timeout: float):
        self.name, self.timeout = name, timeout
        self.status, self.reason, self.seconds, self.details, self.log_tail = "skipped", "", 0.0, {}, ""
        self.gpu = STEPS[name][1]

    def record(self) -> dict:
        return {"name": self.name, "status": self.status, "seconds": round(self.seconds, 1),
                "timeout_s": round(self.timeout), "reason": self.reason, "needs_gpu": self.gpu,
                "details": self.details, "log_tail": self.log_tail}


def run_command(cmd: list[str], env: dict, log: Path, timeout: float) -> int:
    """`cmd` with its output in `log`; on timeout its whole process group is killed (the demo spawns), 124."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as f:
        proc = subprocess.Popen(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, cwd=REPO, start_new_session=True)
        try:
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            f.write(f"\ngpu_smoke: timed out after {timeout:.0f} s\n")
            return 124


def tail(log: Path, chars: int) -> str:
    return log.read_text(errors="replace")[-chars:] if log.is_file() else ""


def probe_step(step: Step, probe: str, device: str, tiny: bool, python: str, env: dict, work: Path) -> None:
    log = work / "logs" / f"{step.name}.log"
    cmd = [python, str(PROBE), probe, "--device", device, "--work", str(work), *(["--tiny"] if tiny else [])]
    rc = run_command(cmd, env, log, step.timeout)
    found = [line for line in tail(log, 10**6).splitlines() if line.startswith("GPU_SMOKE_RESULT ")]
    result = json.loads(found[-1].split(" ", 1)[1]) if found and rc == 0 else None
    if result is None:
        step.status = "failed"
        last = ([line.strip() for line in tail(log, 4000).splitlines() if line.strip()] or [""])[-1][:300]
        step.reason = (f"timed out after {step.timeout:.0f} s" if rc == 124 else
                       f"the probe exited {rc} with no result" + (f": {last}" if last else ""))
        step.log_tail = tail(log, 3000)
        return
    step.status = "passed" if result.pop("passed") else "failed"
    step.reason = result.pop("reason")
    step.details = result
    step.log_tail = tail(log, 3000) if step.status == "failed" else ""


def driver_step(step: Step, gpus: list[dict]) -> None:
    if not gpus:
        step.status, step.reason = "failed", "nvidia-smi lists no NVIDIA GPU"
        return
    compat = forward_compat_driver(os.environ.get("LD_LIBRARY_PATH", ""))
    problem = driver_problem(gpus[0]["driver"], gpus[0]["driver_cuda"], NEED_CUDA, compat)
    step.details = {"gpus": gpus, "forward_compat_driver": compat}
    step.status = "failed" if problem else "passed"
    step.reason = problem or f"driver {gpus[0]['driver']} (CUDA {gpus[0]['driver_cuda']}) runs CUDA {NEED_CUDA} builds"


def wheels_step(step: Step, args, work: Path, dry_run: bool) -> dict:
    """Check the folder; install it (GPU) or let pip check it installs for cp312 (dry run). Returns its summary."""
    pins = read_list()
    info, problems = check_folder(args.wheels.resolve(), pins)
    problems = list_problems(pins) + problems
    info["listed"] = len(pins)
    step.details = info
    if not info["present"] or not (args.wheels / MANIFEST).is_file():
        step.status = "skipped" if dry_run and not list_problems(pins) else "failed"
        step.reason = problems[0] + (" (the dry run checked the list only)" if dry_run else "")
        return info
    if problems:
        step.status, step.reason = "failed", "; ".join(problems[:3])
        return info
    manifest = json.loads((args.wheels / MANIFEST).read_text())
    files = [str(args.wheels.resolve() / e["file"]) for e in manifest["files"]]
    site = work / ("site-check" if dry_run else "site")
    target = (["--python-version", PYTHON, "--implementation", "cp", "--only-binary=:all:",
               *(a for p in PLATFORMS for a in ("--platform", p))] if dry_run else [])
    python = sys.executable if dry_run else args.python
    cmd = [python, "-m", "pip", "install", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir",
           "--disable-pip-version-check", "--quiet", *target, "--target", str(site), *files]
    log = work / "logs" / "wheels.log"
    rc = run_command(cmd, dict(os.environ), log, step.timeout)
    if dry_run:
        shutil.rmtree(site, ignore_errors=True)
    what = f"{info['files']} wheels, {info['total_mib']} MiB of {LIMIT_BYTES // MIB}, sha256 as the manifest"
    if rc != 0:
        step.status, step.reason, step.log_tail = "failed", f"{what}; pip install exited {rc}", tail(log, 3000)
    else:
        step.status = "passed"
        step.reason = f"{what}; " + (f"pip installs every one for CPython {PYTHON} (checked, not kept)" if dry_run
                                      else f"installed into {site} (no index, no deps)")
    return info


def step_env(args, work: Path, dry_run: bool) -> dict:
    paths = ([] if dry_run else [str(work / "site")]) + [str(REPO)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(FP32_ENV)
    env.update(PYTHONPATH=os.pathsep.join(paths + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
               HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false", MPLBACKEND="Agg",
               PYTHONUNBUFFERED="1")
    return env


def would_run(args) -> list[dict]:
    return [{"name": name, "timeout_s": timeout, "runs": what}
            for name, (timeout, gpu, what) in STEPS.items() if gpu]


def run(args) -> int:
    dry_run = args.dry_run
    t0, started = time.monotonic(), dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    own_work = args.work is None
    work = Path(tempfile.mkdtemp(prefix="gpu-smoke-")) if own_work else args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    env = step_env(args, work, dry_run)
    python = args.python
    gpus = [] if dry_run else detect_gpus(os.environ.get("GPU_SMOKE_NVIDIA_SMI", "nvidia-smi"))
    steps, wheels = [], {}
    for name, (timeout, gpu, _) in STEPS.items():
        left = args.budget - (time.monotonic() - t0)
        step = Step(name, min(timeout, max(0.0, left - 5)))
        steps.append(step)
        if args.only is not None and name not in args.only:
            step.reason = "not selected (--only)"
            continue
        if dry_run and name in ("driver", "demo_quick"):
            step.reason = "dry run: needs a GPU (see would_run_on_gpu)"
            continue
        if step.timeout < MIN_STEP:
            step.reason = f"time budget spent ({max(0.0, left):.0f} s of {args.budget:.0f} left)"
            continue
        s0 = time.monotonic()
        try:
            if name == "driver":
                driver_step(step, gpus)
            elif name == "wheels":
                wheels = wheels_step(step, args, work, dry_run)
            else:
                probe, device = {"machine": "machine", "engine_fp32": "engine", "handoff_bf16": "handoff",
                                 "demo_quick": "demo"}[name], "cpu" if dry_run else "cuda"
                probe_step(step, probe, device, dry_run, python, env, work)
                if dry_run and step.status == "passed" and gpu:
                    step.reason = "CPU half: " + step.reason.removeprefix("CPU half: ")
        except Exception as e:  # a step's own bug: recorded, the others still run
            step.status, step.reason = "failed", f"{type(e).__name__}: {e}"
        step.seconds = time.monotonic() - s0
    report = write_report(args, started, t0, steps, gpus, wheels, dry_run)
    if own_work:
        shutil.rmtree(work, ignore_errors=True)
    print(report["summary"])
    return 1 if any(s.status == "failed" for s in steps) else 0


def write_report(args, started: str, t0: float, steps: list[Step], gpus: list[dict], wheels: dict,
                 dry_run: bool) -> dict:
    by_name = {s.name: s for s in steps}
    probe = by_name["machine"].details
    machine = {"gpu": probe.get("gpu") or (gpus[0]["name"] if gpus else None), "capability": probe.get("capability"),
               "gpu_count": len(gpus) if gpus else probe.get("device_count"),
               "driver": gpus[0]["driver"] if gpus else None, "driver_cuda": gpus[0]["driver_cuda"] if gpus else None,
               "torch": probe.get("torch"), "torch_cuda": probe.get("torch_cuda"), "python": probe.get("python")}
    count = {k: sum(s.status == k for s in steps) for k in ("passed", "failed", "skipped")}
    failed = [s.name for s in steps if s.status == "failed"]
    wall = round(time.monotonic() - t0, 1)
    where = "dry run on CPU" if dry_run else f"{machine['gpu'] or 'no GPU'}, driver {machine['driver']}, torch {machine['torch']}"
    path = args.out / "gpu_smoke.json"
    summary = (f"gpu smoke: {count['passed']} passed, {count['failed']} failed, {count['skipped']} skipped"
               + (f" (failed: {', '.join(failed)})" if failed else "") + f" in {wall} s | {where} -> {path}")
    demo = by_name["demo_quick"].details
    report = {"format": 1, "mode": "dry-run" if dry_run else "gpu", "started_utc": started,
              "finished_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
              "wall_seconds": wall, "budget_seconds": args.budget, "machine": machine, "wheels": wheels,
              "steps": [s.record() for s in steps],
              "results": {"engine_fp32_equal": by_name["engine_fp32"].status == "passed" and not dry_run,
                          "handoff_bf16_accuracy": None if dry_run else by_name["handoff_bf16"].details.get("accuracy"),
                          "demo_quick_wall_seconds": demo.get("wall_seconds")},
              "would_run_on_gpu": would_run(args) if dry_run else [],
              "gpu_check_proofs": proofs.as_records(), "summary": summary}
    path.write_text(json.dumps(report, indent=2) + "\n")
    return report


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        if args.prepare:
            print(prepare(args.wheels.resolve()))
            return 0
    except UsageError as e:
        print(e, file=sys.stderr)
        return 2
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
