"""Validate a GPU machine for the scale path: every GPU check, one report, one summary line.

    bash scripts/gpu_check.sh --out DIR [--python PY] [--model Qwen/Qwen3-0.6B] [--only NAME ...] [--skip NAME ...]
    bash scripts/gpu_check.sh --out DIR --wheelhouse WHEELHOUSE      # a node without internet

Run it first on any new GPU machine (or inside the Dockerfile.repro image). It finds the
GPU stack (--python, $GPU_CHECK_PYTHON, .venv-gpu, or the Python running it: the first
whose torch sees CUDA and that imports vLLM and verl). With none, it installs the tested
stack of vllm_source/stack.py (torch, vLLM, flashinfer, verl without its [vllm] extra,
transformers, each at the pinned version) and this package with its dev, eval and wandb
extras into .venv-gpu from the index, unless --no-install. With --wheelhouse WHEELHOUSE
(built by scripts/gpu_wheelhouse.sh) it installs into .venv-gpu from that folder with no
index instead: split files are joined and every file is checked against the manifest's
sha256 first, the stack is the release the wheelhouse was built for, and a wheelhouse
built for a machine that already has torch (--present) gets a venv that sees the system's
packages. Then it runs on CUDA, each check as one entry of DIR/gpu_check.json:

  stack             the stack imports and torch sees the GPUs (versions recorded)
  async_scheduling  vLLM keeps async scheduling on for the tandem engine (its CUDA default)
  vllm_engine       the scale lane's vLLM tests against the reference engine (eager)
  vllm_compiled     the lane's compiled-engine tests (pytest -k "compiled")
  vllm_tp2          the lane's tensor-parallel tests and split-placement tests (-k "tensor_parallel or tp2 or split"); 2+ GPUs only
  vllm_v2           the tandem engine on vLLM 0.32's V2 model runner, in the interpreter of --v2-python (a venv
                    with `pip install -e .[vllm-v2]`; skipped without one): with CUDA graphs and async scheduling
                    on, the runner reported by the workers is V2 and greedy tokens and masks equal the reference
                    engine's; then the V2 lane's tests (tests/test_scale_vllm_v2_*.py)
  bench_vllm        scripts/bench_vllm.py --quick (solo vs tandem throughput, JSON kept)
  launchers_data    a tiny DeepScaleR slice from the hub (64 training, 16 validation problems)
  launch_tandem     the tandem launcher: 2 GRPO steps on --model, then a 3rd resumed from the checkpoint
  launch_tandem_split  the tandem launcher with tandem.placement=split (senior and junior on two GPUs); 2+ GPUs only
  launch_vanilla    the same for the vanilla launcher
  launch_tandem_moving  launch_tandem with tandem.junior_update=sync:1: the junior follows the senior in the
                    sleeping (level 2) engine (another junior each step, equal to the senior after each copy),
                    and the resumed launch rebuilds step 2's junior (the same checksum)
  launch_tandem_score   launch_tandem with partner_reward.weight=0.1: verl's reference worker scores on the GPU

Each entry is passed, failed or skipped (with the reason); nothing is reported as passed
that did not run. Logs go to DIR/logs/. Exit: 0 when no check failed, 1 when one did,
2 (one line) when no NVIDIA GPU is visible, the arguments are wrong or the wheelhouse is
missing, incomplete or differs from its manifest. The report's expected_stack is the
release of vllm_source/stack.py that was to be installed. Only the standard library is
used here; the checks run in the stack's Python.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CHECKS = ("stack", "async_scheduling", "vllm_engine", "vllm_compiled", "vllm_tp2", "vllm_v2", "bench_vllm",
          "launchers_data", "launch_tandem", "launch_tandem_split", "launch_vanilla", "launch_tandem_moving",
          "launch_tandem_score")
VARIANTS = {  # launch_tandem_<variant>: the tandem run with these overrides, in a launchers-<variant> folder
    "moving": ["tandem.junior_update=sync:1"],  # a copy: exact in bfloat16 (ema needs a float32 rollout)
    "score": ["partner_reward.weight=0.1"],
}
ENGINE_TESTS = ("tests/test_scale_vllm_engine*.py", "tests/test_scale_vllm_gpu_*.py", "tests/test_scale_vllm_split*.py")
SELECT = {"vllm_engine": "not (compiled or tensor_parallel or tp2 or split)", "vllm_compiled": "compiled",
          "vllm_tp2": "tensor_parallel or tp2 or split"}
CPU_ONLY_ENV = ("VLLM_TARGET_DEVICE", "VERL_PLATFORM", "VERL_ENGINE_DEVICE", "VLLM_CPU_KVCACHE_SPACE",
                "VLLM_CPU_OMP_THREADS_BIND", "TANDEM_VLLM_CPU_LIVE_WEIGHTS", "VERL_USE_EXTERNAL_MODULES")
DATASET = "agentica-org/DeepScaleR-Preview-Dataset"


def load_by_path(name: str, path: Path):
    """A module of this checkout loaded from its file, so that nothing else of the package is imported."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


WHEELHOUSE = load_by_path("_tandem_gpu_wheelhouse", REPO / "scripts" / "gpu_wheelhouse.py")
STACK = WHEELHOUSE.load_stack()  # vllm_source/stack.py: the one home of the stack's pins

PROBE = r"""
import json, importlib.metadata as md, platform
out = {"python": platform.python_version()}
import torch
out.update(torch=torch.__version__, torch_cuda=torch.version.cuda, cuda_available=torch.cuda.is_available(),
           device_count=torch.cuda.device_count())
for name, dist in (("vllm", "vllm"), ("verl", "verl"), ("transformers", "transformers"),
                   ("flashinfer", "flashinfer-python"), ("flash_attn", "flash-attn")):
    try:
        out[name] = md.version(dist)
    except md.PackageNotFoundError:
        out[name] = None
import vllm, verl  # the stack must import, not only be installed
print("GPU_CHECK_PROBE " + json.dumps(out))
"""

ASYNC_PROBE = r"""
import json, os, tempfile
os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # as the lane's engine tests run
from tandem.config import TandemConfig
from tandem_app.zoo import build_tiny
from tandem_eval.backends import rollout_backend
path = build_tiny(tempfile.mkdtemp(), seed=0)
eng = rollout_backend("vllm", str(path), str(path), TandemConfig(), dtype="float32", max_model_len=512,
                      gpu_memory_utilization=0.3, seed=0)
cfg = eng.llm.llm_engine.vllm_config
print("GPU_CHECK_PROBE " + json.dumps({"async_scheduling": bool(cfg.scheduler_config.async_scheduling),
                                        "enforce_eager": bool(cfg.model_config.enforce_eager)}))
"""

V2_PROBE = r"""
import json, os, tempfile
os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
from tandem.coins import request_key
from tandem.config import TandemConfig
from tandem.engine import TandemEngine
from tandem.models import load_model, load_tokenizer
from tandem.sampling import SamplingConfig
from tandem_app.zoo import build_tiny
from vllm_source.engine import VLLMEngine
senior, junior = build_tiny(tempfile.mkdtemp(), seed=0), build_tiny(tempfile.mkdtemp(), seed=1)
cfg = TandemConfig(selection_strategy="bernoulli", prob_senior=0.5, junior_model=str(junior))
eng = VLLMEngine(str(senior), cfg, dtype="float32", max_model_len=256, gpu_memory_utilization=0.3, seed=0,
                 enforce_eager=False)  # CUDA graphs on, as a GPU run uses them
prompts, keys = [[1, 2, 3, 4], [5, 6, 7]], [request_key("v2", 0), request_key("v2", 1)]
greedy = SamplingConfig(temperature=0.0, max_new_tokens=16)
got = eng.generate(prompts, greedy, keys)
ref = TandemEngine(load_model(senior, "float32", "cuda"), load_model(junior, "float32", "cuda"),
                   load_tokenizer(senior), cfg).generate(prompts, greedy, keys)
vcfg = eng.llm.llm_engine.vllm_config
print("GPU_CHECK_PROBE " + json.dumps({
    **eng.model_runner(), "async_scheduling": bool(vcfg.scheduler_config.async_scheduling),
    "cudagraph_mode": str(vcfg.compilation_config.cudagraph_mode),
    "equal_to_reference": [(r.token_ids, r.authorship_mask) for r in got] == [(r.token_ids, r.authorship_mask) for r in ref]}))
"""

DATA = r"""
import json, sys
from datasets import load_dataset
out, n_train, n_val = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = load_dataset("%s", split="train").select(range(n_train + n_val))
for name, part in (("task_train", range(n_train)), ("task_test", range(n_train, n_train + n_val))):
    with open(f"{out}/{name}.jsonl", "w") as f:
        for i in part:
            f.write(json.dumps({"id": str(i), "problem": rows[i]["problem"], "answer": rows[i]["answer"]}) + "\n")
""" % DATASET


class UsageError(Exception):
    """Bad arguments or no GPU: one line, exit 2."""


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"gpu_check: {message} (see --help)")


@dataclass
class Check:
    name: str
    status: str = "skipped"  # passed | failed | skipped
    reason: str = ""
    seconds: float | None = None
    log: str | None = None
    details: dict = field(default_factory=dict)


class Runner:
    """Runs the checks' commands; tests replace it (the report logic is what they check)."""

    def run(self, cmd: list[str], env: dict, log: Path, timeout: float) -> int:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w") as f:
            try:
                return subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=timeout,
                                      cwd=REPO).returncode
            except subprocess.TimeoutExpired:
                f.write(f"\ngpu_check: timed out after {timeout:.0f} s\n")
                return 124


def parse_args(argv: list[str]) -> argparse.Namespace:
    ap = OneLineParser(prog="scripts/gpu_check.sh", description=__doc__.splitlines()[0],
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="\n".join(__doc__.splitlines()[2:]) + f"\nvLLM releases of stack.py: {STACK.describe()}")
    ap.add_argument("--out", required=True, type=Path, help="report directory (DIR/gpu_check.json, DIR/logs/)")
    ap.add_argument("--python", default=None, help="the GPU stack's interpreter (default: found, else installed)")
    ap.add_argument("--venv", type=Path, default=REPO / ".venv-gpu", help="where to install the stack if none is found")
    ap.add_argument("--no-install", action="store_true", help="never install; fail the stack check instead")
    ap.add_argument("--wheelhouse", type=Path, default=None, metavar="DIR",
                    help="install the stack and this package into --venv from DIR (scripts/gpu_wheelhouse.sh) with "
                         "no index, then run the checks in it")
    ap.add_argument("--v2-python", default=os.environ.get("GPU_CHECK_V2_PYTHON"), metavar="PY",
                    help="interpreter of a venv with vLLM 0.32 (pip install -e .[vllm-v2]) for the vllm_v2 check")
    ap.add_argument("--model", default="Qwen/Qwen3-0.6B", help="checkpoint for the launcher runs (hub name or path)")
    ap.add_argument("--only", nargs="+", default=None, metavar="NAME", help=f"run only these of: {', '.join(CHECKS)}")
    ap.add_argument("--skip", nargs="+", default=[], metavar="NAME", help="skip these checks")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per command (default 1800)")
    args = ap.parse_args(argv)
    for name in (args.only or []) + args.skip:
        if name not in CHECKS:
            raise UsageError(f"gpu_check: no check named {name!r}; checks: {', '.join(CHECKS)}")
    if args.wheelhouse is not None and (args.no_install or args.python):
        raise UsageError("gpu_check: --wheelhouse installs into --venv: drop --no-install and --python")
    args.manifest, args.release = (None, STACK.TESTED) if args.wheelhouse is None else check_wheelhouse(args.wheelhouse)
    return args


def check_wheelhouse(folder: Path) -> tuple[dict, object]:
    """The wheelhouse's manifest and its release in stack.py, without hashing; one line (exit 2) when it cannot serve."""
    folder = folder.resolve()
    try:
        manifest = WHEELHOUSE.load_manifest(folder)
        WHEELHOUSE.check_complete(folder, manifest)
    except WHEELHOUSE.WheelhouseError as e:
        raise UsageError(f"gpu_check: --wheelhouse: {e}") from None
    release = STACK.release_for_vllm(manifest["vllm"])
    rebuild = f"rebuild it with bash scripts/gpu_wheelhouse.sh --out {folder}"
    if release is None or release.vllm != manifest["vllm"]:
        raise UsageError(f"gpu_check: --wheelhouse {folder} holds vLLM {manifest['vllm']}, which "
                         f"vllm_source/stack.py does not list ({STACK.describe()}): {rebuild}")
    if manifest["stack"] != WHEELHOUSE.stack_requirements(STACK, release):
        raise UsageError(f"gpu_check: --wheelhouse {folder} was built for {' '.join(manifest['stack'])}, "
                         f"vllm_source/stack.py now pins {' '.join(WHEELHOUSE.stack_requirements(STACK, release))}: {rebuild}")
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    if manifest["python"] != python:
        raise UsageError(f"gpu_check: --wheelhouse {folder} is for Python {manifest['python']} and this is Python "
                         f"{python}: run with GPU_CHECK_LAUNCHER_PYTHON=python{manifest['python']}, or build the "
                         f"wheelhouse with --python {python}")
    return manifest, release


def expected_stack(release) -> dict:
    """What the stack should be: one release of vllm_source/stack.py and the pins that go with it."""
    return {"vllm": release.vllm, "status": release.status, "torch": release.torch, "torch_cuda": release.torch_cuda,
            "flashinfer": release.flashinfer, "flashinfer_cubin": release.flashinfer_cubin, "verl": STACK.VERL,
            "transformers": STACK.TRANSFORMERS_RESOLVED}


def install_steps(args) -> list[list[str]]:
    """The commands that build --venv: from the index (the tested stack) or from --wheelhouse with no index."""
    python, stack = str(args.venv / "bin" / "python"), WHEELHOUSE.stack_requirements(STACK, args.release)
    if args.manifest is None:
        project = f"{REPO}[{','.join(WHEELHOUSE.EXTRAS)}]"
        return [[sys.executable, "-m", "venv", str(args.venv)],
                [python, "-m", "pip", "install", "--upgrade", "pip"],
                [python, "-m", "pip", "install", *stack, "-e", project]]
    manifest, local = args.manifest, ["--no-index", "--find-links", str(args.wheelhouse.resolve())]
    system = ["--system-site-packages"] if manifest["skipped_present"] else []  # the image's torch, for one
    return [[sys.executable, "-m", "venv", *system, str(args.venv)],
            [python, "-m", "pip", "install", *local, "--upgrade", *manifest["build_requires"]],
            [python, "-m", "pip", "install", *local, "--no-build-isolation", *stack, "-e",
             f"{REPO}[{','.join(manifest['extras'])}]"]]


def detect_gpus(nvidia_smi: str) -> list[dict]:
    """The GPUs nvidia-smi lists (name, memory, driver, CUDA the driver supports); [] when none."""
    exe = shutil.which(nvidia_smi)
    if exe is None:
        return []
    query = [exe, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits"]
    try:
        res = subprocess.run(query, capture_output=True, text=True, timeout=60)
        banner = subprocess.run([exe], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    if res.returncode != 0:
        return []
    cuda = banner.split("CUDA Version:")[1].split()[0] if "CUDA Version:" in banner else None
    gpus = []
    for line in res.stdout.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            gpus.append({"name": parts[0], "memory_mib": parts[1], "driver": parts[2], "driver_cuda": cuda})
    return gpus


def gpu_env(out: Path) -> dict:
    """The environment of every check: CPU-lane switches removed, this checkout first on the path."""
    env = {k: v for k, v in os.environ.items() if k not in CPU_ONLY_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["TANDEM_SCALE_CACHE"] = str(out / "cache")
    env["TANDEM_REQUIRE_SCALE"] = "1"  # a skipped test inside a check fails that check
    return env


def probe(runner: Runner, python: str, script: str, env: dict, log: Path, timeout: float) -> dict | None:
    """Run `script` in `python`; the JSON it prints after GPU_CHECK_PROBE, or None."""
    rc = runner.run([python, "-c", script], env, log, timeout)
    if rc != 0 or not log.is_file():
        return None
    for line in log.read_text().splitlines():
        if line.startswith("GPU_CHECK_PROBE "):
            return json.loads(line.split(" ", 1)[1])
    return None


def usable(facts: dict | None) -> bool:
    return bool(facts and facts.get("cuda_available") and facts.get("device_count", 0) > 0
                and facts.get("vllm") and facts.get("verl"))


def find_stack(args, runner: Runner, env: dict, logs: Path) -> tuple[str | None, dict | None, Check]:
    """The first usable interpreter among the candidates, installing one if allowed."""
    check, t0 = Check("stack"), time.monotonic()
    candidates = [args.python] if args.python else [os.environ.get("GPU_CHECK_PYTHON"),
                                                    str(args.venv / "bin" / "python"), sys.executable]
    if args.wheelhouse is not None:
        candidates = []  # install from it first, then check the venv
    tried = []
    for python in [c for c in candidates if c]:
        if not (Path(python).is_file() or shutil.which(python)):
            continue
        facts = probe(runner, python, PROBE, env, logs / "stack.log", args.timeout)
        tried.append(python)
        if usable(facts):
            return python, facts, finish(check, t0, "passed", f"{python}", logs / "stack.log", facts)
    if args.python or args.no_install:
        why = f"no usable GPU stack ({', '.join(tried) or 'no interpreter found'}): torch must see CUDA and vLLM " \
              "and verl must import; see the log, or drop --no-install to build .venv-gpu"
        return None, None, finish(check, t0, "failed", why, logs / "stack.log")
    python = str(args.venv / "bin" / "python")
    source = f"from the wheelhouse {args.wheelhouse}" if args.wheelhouse is not None else "from the index"
    for i, cmd in enumerate(install_steps(args)):
        if runner.run(cmd, env, logs / f"install-{i}.log", args.timeout * 2) != 0:
            return None, None, finish(check, t0, "failed", f"installing the stack into {args.venv} {source} failed",
                                      logs / f"install-{i}.log")
    facts = probe(runner, python, PROBE, env, logs / "stack.log", args.timeout)
    if usable(facts):
        return python, facts, finish(check, t0, "passed", f"installed into {args.venv} {source}", logs / "stack.log",
                                     facts)
    return None, None, finish(check, t0, "failed", f"installed into {args.venv} {source}, but torch does not see "
                                                   "CUDA or vLLM/verl do not import", logs / "stack.log", facts or {})


def finish(check: Check, t0: float, status: str, reason: str, log: Path | None = None, details=None) -> Check:
    check.status, check.reason, check.seconds = status, reason, round(time.monotonic() - t0, 1)
    check.log, check.details = (str(log) if log else None), dict(details or {})
    return check


def pytest_check(name: str, python: str, runner: Runner, env: dict, logs: Path, timeout: float) -> Check:
    check, t0, log = Check(name), time.monotonic(), logs / f"{name}.log"
    files = sorted(str(p.relative_to(REPO)) for pattern in ENGINE_TESTS for p in REPO.glob(pattern))
    cmd = [python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *files, "-k", SELECT[name]]
    rc = runner.run(cmd, env, log, timeout)
    tail = log.read_text().strip().splitlines()[-1] if log.is_file() and log.read_text().strip() else ""
    if rc == 5:
        return finish(check, t0, "skipped", f"no scale-lane test matches -k {SELECT[name]!r} in {', '.join(ENGINE_TESTS)}", log)
    status = "passed" if rc == 0 else "failed"
    return finish(check, t0, status, f"pytest -k {SELECT[name]!r}: {tail or f'exit {rc}'}", log, {"exit": rc})


def command_check(name: str, cmd: list[str], runner: Runner, env: dict, logs: Path, timeout: float,
                  what: str) -> Check:
    check, t0, log = Check(name), time.monotonic(), logs / f"{name}.log"
    rc = runner.run(cmd, env, log, timeout)
    return finish(check, t0, "passed" if rc == 0 else "failed", what if rc == 0 else f"{what}: exit {rc}", log,
                  {"exit": rc})


def launcher_check(name: str, python: str, args, n_gpus: int, runner: Runner, env: dict, logs: Path) -> Check:
    """Launch 1: 2 GRPO steps; launch 2: the 3rd, resumed from the step-2 checkpoint (scripts/scale/smoke_launch.sh)."""
    check, t0 = Check(name), time.monotonic()
    run, variant = name.removeprefix("launch_"), None
    out = args.out / "launchers"
    if run.removeprefix("tandem_") in VARIANTS:
        variant, run = run.removeprefix("tandem_"), "tandem"
        out = args.out / f"launchers-{variant}"
        out.mkdir(parents=True, exist_ok=True)
        if not (out / "data").exists():
            (out / "data").symlink_to(args.out / "launchers" / "data")
    shutil.rmtree(out / run, ignore_errors=True)
    (out / run).mkdir(parents=True)
    launch_env = {**env, "SMOKE_DEVICE": "gpu", "SMOKE_N_GPUS": str(n_gpus),
                  "PATH": f"{Path(python).parent}{os.pathsep}{env.get('PATH', '')}"}
    for n, steps in ((1, 2), (2, 3)):
        log, s0 = out / run / f"launch-{n}.log", time.monotonic()
        cmd = ["bash", str(REPO / "scripts" / "scale" / "smoke_launch.sh"), str(out), args.model, run, str(n),
               str(steps), *VARIANTS.get(variant, [])]
        rc = runner.run(cmd, launch_env, log, args.timeout)
        (out / run / f"launch-{n}.seconds").write_text(str(int(time.monotonic() - s0)))
        if rc != 0:
            return finish(check, t0, "failed", f"launch {n} ({steps} steps) exited {rc}", log)
    try:
        summary = load_summary().summarize_run(out / run, tandem=run.startswith("tandem"))
    except SystemExit as e:  # smoke_summary reports missing files this way
        return finish(check, t0, "failed", str(e), out / run / "launch-2.log")
    ok = summary["steps"] == 2 and summary["resumed_step"] == 3 and 3 in summary["checkpoint_steps"]
    reason = f"2 steps + step {summary['resumed_step']} resumed; checkpoints {summary['checkpoint_steps']}"
    # read from the rollout workers (engines-N.jsonl); both arms must decode on V1
    ok = ok and summary["model_runner"] == "v1"
    reason += f"; vLLM {summary['vllm_version']}, {summary['model_runner']} model runner ({summary['model_runner_class']})"
    if run.startswith("tandem"):
        fraction = summary["senior_token_fraction"]
        ok = ok and 0.3 < fraction < 0.7
        reason += f"; senior token fraction {fraction:.3f} (0.3-0.7 expected)"
        gaps = summary.get("senior_rollout_probs_diff_max_per_step") or []
        if any(g is not None for g in gaps):  # reported, not judged: bf16 vLLM vs FSDP has no measured tolerance yet
            reason += "; senior-token rollout/trainer gap per step " + ", ".join(
                "n/a" if g is None else f"{g:.1e}" for g in gaps)
    if variant == "moving":
        sums = summary.get("junior_checksum_per_step") or []
        after = summary.get("junior_senior_max_abs_diff_per_step") or []
        ok = ok and summary.get("junior_updated_per_step") == [1, 1, 1] and len(set(sums)) == 3
        ok = ok and after == [0.0, 0.0, 0.0] and summary.get("junior_resumed_checksum") == sums[1]
        reason += f"; junior checksum per step {sums}, rebuilt at resume: {summary.get('junior_resumed_checksum')}"
    if variant == "score":
        scores = summary.get("partner_score_per_step") or []
        ok = ok and len(scores) == 3 and all(x is not None and abs(x) < float("inf") for x in scores)
        reason += f"; partner score per step {scores} ({summary.get('partner_seconds_per_step')} s)"
    return finish(check, t0, "passed" if ok else "failed", reason, out / run / "launch-2.log", summary)


def load_summary():
    spec = importlib.util.spec_from_file_location("smoke_summary", REPO / "scripts" / "scale" / "smoke_summary.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def wanted(args) -> list[str]:
    return [c for c in CHECKS if (args.only is None or c in args.only) and c not in args.skip]


def run_checks(args, gpus: list[dict], runner: Runner) -> tuple[list[Check], dict]:
    """Every check in order; the ones that cannot run are skipped with the reason."""
    logs, env, chosen = args.out / "logs", gpu_env(args.out), wanted(args)
    checks: dict[str, Check] = {}
    python, facts, checks["stack"] = find_stack(args, runner, env, logs)
    for name in CHECKS[1:]:
        if name not in chosen:
            checks[name] = Check(name, reason="not selected (--only/--skip)")
        elif python is None:
            checks[name] = Check(name, reason="the GPU stack is not usable (see the stack check)")
        elif name == "vllm_v2":  # its own interpreter: vLLM 0.32 cannot share a venv with verl 0.9.1
            checks[name] = v2_check(args.v2_python, runner, env, logs, args.timeout)
        elif name in ("vllm_tp2", "launch_tandem_split") and len(gpus) < 2:
            checks[name] = Check(name, reason=f"needs 2 GPUs; this machine has {len(gpus)}")
        elif name.startswith("launch_") and checks.get("launchers_data", Check("")).status != "passed":
            checks[name] = Check(name, reason="no training data (see launchers_data)")
        elif name == "async_scheduling":
            t0, log = time.monotonic(), logs / "async_scheduling.log"
            got = probe(runner, python, ASYNC_PROBE, env, log, args.timeout)
            if got is None:
                checks[name] = finish(Check(name), t0, "failed", "the tandem engine did not start", log)
            else:
                status = "passed" if got["async_scheduling"] else "failed"
                why = "on" if got["async_scheduling"] else "vLLM turned it off for the tandem engine"
                checks[name] = finish(Check(name), t0, status, f"async scheduling {why}", log, got)
        elif name in SELECT:
            checks[name] = pytest_check(name, python, runner, env, logs, args.timeout)
        elif name == "bench_vllm":
            cmd = [python, "scripts/bench_vllm.py", "--quick", "--out", str(args.out / "bench_vllm.json")]
            checks[name] = command_check(name, cmd, runner, env, logs, args.timeout, "bench_vllm.json written")
        elif name == "launchers_data":
            data = args.out / "launchers"
            data.mkdir(parents=True, exist_ok=True)
            check, t0 = Check(name), time.monotonic()
            rc = runner.run([python, "-c", DATA, str(data), "64", "16"], env, logs / "launchers_data.log", args.timeout)
            if rc == 0:
                rc = runner.run([python, "scripts/prepare_deepscaler.py", "--out", str(data / "data"), "--train",
                                 str(data / "task_train.jsonl"), "--val", str(data / "task_test.jsonl"),
                                 "--heldout", "0"], env,
                                logs / "launchers_data-parquet.log", args.timeout)
            checks[name] = finish(check, t0, "passed" if rc == 0 else "failed",
                                  f"{DATASET}: 64 training, 16 validation problems" + ("" if rc == 0 else f": exit {rc}"),
                                  logs / "launchers_data.log")
        else:
            checks[name] = launcher_check(name, python, args, len(gpus), runner, env, logs)
    if "stack" not in chosen and checks["stack"].status == "passed":
        checks["stack"].reason += " (always run: the other checks need it)"
    return list(checks.values()), facts or {}


def v2_check(python: str | None, runner: Runner, env: dict, logs: Path, timeout: float) -> Check:
    """vllm_v2: the V2 engine probe (runner, CUDA graphs, async scheduling, tokens), then the V2 lane's tests."""
    check, t0, log = Check("vllm_v2"), time.monotonic(), logs / "vllm_v2.log"
    if python is None:
        return finish(check, t0, "skipped", "no V2 stack: pass --v2-python, the interpreter of a venv with "
                      "`pip install -e .[vllm-v2]` (vLLM 0.32.0)")
    got = probe(runner, python, V2_PROBE, env, log, timeout)
    if got is None:
        return finish(check, t0, "failed", "the tandem engine did not start on the V2 stack", log)
    wrong = [what for what, ok in (("runner " + got.get("runner", "?"), got.get("runner") == "v2"),
                                   ("async scheduling off", got.get("async_scheduling")),
                                   ("CUDA graphs off", got.get("cudagraph_mode", "NONE").split(".")[-1] != "NONE"),
                                   ("tokens differ from the reference engine", got.get("equal_to_reference")))
             if not ok]
    if wrong:
        return finish(check, t0, "failed", "V2 engine: " + ", ".join(wrong), log, got)
    tests_log = logs / "vllm_v2-tests.log"
    files = sorted(str(p.relative_to(REPO)) for p in REPO.glob("tests/test_scale_vllm_v2_*.py"))
    rc = runner.run([python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", *files], env, tests_log, timeout)
    reason = (f"vLLM {got.get('vllm')} V2 runner ({got.get('model_runner')}), CUDA graphs {got.get('cudagraph_mode')}, "
              f"async scheduling on, tokens equal the reference; V2 lane tests " + ("passed" if rc == 0 else f"exit {rc}"))
    return finish(check, t0, "passed" if rc == 0 else "failed", reason, tests_log, got)


def summary_line(checks: list[Check], gpus: list[dict], versions: dict, report: Path) -> str:
    count = {s: sum(c.status == s for c in checks) for s in ("passed", "failed", "skipped")}
    failed = [c.name for c in checks if c.status == "failed"]
    gpu = f"{len(gpus)}x {gpus[0]['name']}" if gpus else "no GPU"
    stack = ", ".join(f"{k} {versions.get(k)}" for k in ("driver", "cuda", "torch", "vllm", "verl"))
    return (f"gpu check: {count['passed']} passed, {count['failed']} failed, {count['skipped']} skipped"
            + (f" (failed: {', '.join(failed)})" if failed else "") + f" | {gpu}, {stack} -> {report}")


def wheelhouse_summary(args) -> dict | None:
    if args.manifest is None:
        return None
    keys = ("vllm", "release_status", "torch_source", "python", "file_count", "total_bytes")
    return {"dir": str(args.wheelhouse.resolve()), **{k: args.manifest.get(k) for k in keys}}


def main(argv: list[str] | None = None, runner: Runner | None = None) -> int:
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        gpus = detect_gpus(os.environ.get("GPU_CHECK_NVIDIA_SMI", "nvidia-smi"))
        if not gpus:
            raise UsageError("gpu_check: no NVIDIA GPU found (nvidia-smi lists none); this command validates a GPU "
                             "machine; on CPU run bash scripts/test_scale.sh")
        if args.wheelhouse is not None:
            print(f"gpu_check: joining and checking the wheelhouse {args.wheelhouse} (sha256) ...", flush=True)
            try:
                WHEELHOUSE.join(args.wheelhouse.resolve())
            except WHEELHOUSE.WheelhouseError as e:
                raise UsageError(f"gpu_check: --wheelhouse: {e}") from None
    except UsageError as e:
        print(e, file=sys.stderr)
        return 2
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    started = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    checks, facts = run_checks(args, gpus, runner or Runner())
    versions = {"driver": gpus[0]["driver"], "driver_cuda": gpus[0]["driver_cuda"], "cuda": facts.get("torch_cuda"),
                **{k: facts.get(k) for k in ("torch", "vllm", "verl", "transformers", "flashinfer", "flash_attn",
                                             "python")}}
    report = args.out / "gpu_check.json"
    line = summary_line(checks, gpus, versions, report)
    report.write_text(json.dumps({
        "started_utc": started, "finished_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "model": args.model, "gpus": gpus, "versions": versions, "expected_stack": expected_stack(args.release),
        "wheelhouse": wheelhouse_summary(args),
        "checks": [asdict(c) for c in checks], "summary": line}, indent=2) + "\n")
    print(line)
    return 1 if any(c.status == "failed" for c in checks) else 0


if __name__ == "__main__":
    sys.exit(main())
