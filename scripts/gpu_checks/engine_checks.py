"""The tandem engine on CUDA: async scheduling kept on, the scale lane's engine tests (eager,
compiled, tensor-parallel and split), the engine on vLLM's V2 runner (0.32 or 0.33) in its own
interpreter, and bench_vllm's throughput.
"""

from __future__ import annotations

import time
from pathlib import Path

from .checkout import REPO, WHEELHOUSE
from .report import Check, finish
from .command_runner import Runner, probe

ENGINE_TESTS = ("tests/test_scale_vllm_engine*.py", "tests/test_scale_vllm_gpu_*.py", "tests/test_scale_vllm_split*.py")
SELECT = {"vllm_engine": "not (compiled or tensor_parallel or tp2 or split)", "vllm_compiled": "compiled",
          "vllm_tp2": "tensor_parallel or tp2 or split"}

ASYNC_PROBE = r"""
import json, os, tempfile
os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # as the lane's engine tests run
from tandem.process.config import TandemConfig
from tandem_app.zoo import build_tiny
from tandem_backends.registry import build_backend
path = build_tiny(tempfile.mkdtemp(), seed=0)
eng = build_backend("vllm", str(path), str(path), TandemConfig(), dtype="float32", max_model_len=512,
                    gpu_memory_utilization=0.3, seed=0)
cfg = eng.llm.llm_engine.vllm_config
print("GPU_CHECK_PROBE " + json.dumps({"async_scheduling": bool(cfg.scheduler_config.async_scheduling),
                                        "enforce_eager": bool(cfg.model_config.enforce_eager)}))
"""

V2_PROBE = r"""
import json, os, tempfile
os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
from tandem.process.coins import request_key
from tandem.process.config import TandemConfig
from tandem.rollout.sampling import SamplingConfig
from tandem_app.zoo import build_tiny
from tandem_backends.registry import build_backend
senior, junior = build_tiny(tempfile.mkdtemp(), seed=0), build_tiny(tempfile.mkdtemp(), seed=1)
cfg = TandemConfig(selection_strategy="bernoulli", prob_senior=0.5, junior_model=str(junior))
eng = build_backend("vllm", str(senior), str(junior), cfg, dtype="float32", max_model_len=256,
                    gpu_memory_utilization=0.3, seed=0, enforce_eager=False)  # CUDA graphs on, as a GPU run uses them
prompts, keys = [[1, 2, 3, 4], [5, 6, 7]], [request_key("v2", 0), request_key("v2", 1)]
greedy = SamplingConfig(temperature=0.0, max_new_tokens=16)
got = eng.generate(prompts, greedy, keys)
ref = build_backend("engine", senior, junior, cfg, dtype="float32", device="cuda").generate(prompts, greedy, keys)
vcfg = eng.llm.llm_engine.vllm_config
print("GPU_CHECK_PROBE " + json.dumps({
    **eng.model_runner(), "async_scheduling": bool(vcfg.scheduler_config.async_scheduling),
    "cudagraph_mode": str(vcfg.compilation_config.cudagraph_mode),
    "equal_to_reference": [(r.token_ids, r.authorship_mask) for r in got] == [(r.token_ids, r.authorship_mask) for r in ref]}))
"""


def async_check(python: str, runner: Runner, env: dict, logs: Path, timeout: float) -> Check:
    """async_scheduling: vLLM keeps it on for the tandem engine (its CUDA default)."""
    check, t0, log = Check("async_scheduling"), time.monotonic(), logs / "async_scheduling.log"
    got = probe(runner, python, ASYNC_PROBE, env, log, timeout)
    if got is None:
        return finish(check, t0, "failed", "the tandem engine did not start", log)
    status = "passed" if got["async_scheduling"] else "failed"
    why = "on" if got["async_scheduling"] else "vLLM turned it off for the tandem engine"
    return finish(check, t0, status, f"async scheduling {why}", log, got)


def pytest_check(name: str, python: str, runner: Runner, env: dict, logs: Path, timeout: float) -> Check:
    """One SELECT of the lane's engine tests; a selection that matches no test is skipped, not passed."""
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


def bench_check(python: str, out: Path, runner: Runner, env: dict, logs: Path, timeout: float) -> Check:
    """bench_vllm: scripts/bench_vllm.py --quick, its JSON kept beside the report."""
    cmd = [python, "scripts/bench_vllm.py", "--quick", "--out", str(out / "bench_vllm.json")]
    return command_check("bench_vllm", cmd, runner, env, logs, timeout, "bench_vllm.json written")


V2_TESTS = "tests/test_scale_vllm_v2_*.py"
# The extras the V2 venv needs beyond vLLM: the engine-only wheelhouse's (scripts/wheelhouse/target.py
# ENGINE_EXTRAS: eval, which the V2 eval tests import) and its dev tools (ENGINE_DEV_TOOLS: pytest, which
# runs every V2 lane file); `pip install -e .[vllm-v2]` alone has no pytest, so no lane file would import.
V2_EXTRAS, V2_TOOLS = tuple(WHEELHOUSE.ENGINE_EXTRAS), tuple(WHEELHOUSE.ENGINE_DEV_TOOLS)


def v2_venv_command(extra: str) -> str:
    """The install line of a V2 venv (`extra`: vllm-v2 or vllm-latest) with what the V2 lane's tests need."""
    return f"pip install -e '.[{','.join((extra, *V2_EXTRAS))}]' {' '.join(V2_TOOLS)}"


# The probe's engine fails on any GPU<->CPU sync in vLLM's step after warm-up (vllm/utils/gpu_sync_debug.py,
# 0.32 and 0.33): the tandem processor decides authors on the device. Not for the lane's tests, which drive
# vLLM's warm-up and profiling passes (syncs of vLLM's own) after the check is on.
V2_PROBE_ENV = {"VLLM_GPU_SYNC_CHECK": "error"}


def v2_test_commands(python: str, n_gpus: int) -> list[tuple[str, list[str]]]:
    """(log name, command) per V2 lane file: one pytest process each, so each file's engines are freed
    when it ends; the split tests (two devices) deselected below two GPUs, as the V1 checks skip vllm_tp2."""
    files = sorted(str(p.relative_to(REPO)) for p in REPO.glob(V2_TESTS))
    deselect = ["-k", "not split"] if n_gpus < 2 else []
    return [(f"vllm_v2-{Path(f).stem}.log", [python, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", f,
                                             *deselect]) for f in files]


def v2_check(python: str | None, runner: Runner, env: dict, logs: Path, timeout: float, n_gpus: int = 1) -> Check:
    """vllm_v2: the V2 engine probe (runner, CUDA graphs, async scheduling, tokens), then the V2 lane's tests."""
    check, t0, log = Check("vllm_v2"), time.monotonic(), logs / "vllm_v2.log"
    if python is None:
        return finish(check, t0, "skipped", "no V2 stack: pass --v2-python, the interpreter of a venv with "
                      f"`{v2_venv_command('vllm-v2')}` (vLLM 0.32.0) or `{v2_venv_command('vllm-latest')}` (0.33.0)")
    got = probe(runner, python, V2_PROBE, {**env, **V2_PROBE_ENV}, log, timeout)
    if got is None:
        engine = "the tandem engine did not start on the V2 stack"
    else:
        wrong = [what for what, ok in (("runner " + got.get("runner", "?"), got.get("runner") == "v2"),
                                       ("async scheduling off", got.get("async_scheduling")),
                                       ("CUDA graphs off", got.get("cudagraph_mode", "NONE").split(".")[-1] != "NONE"),
                                       ("tokens differ from the reference engine", got.get("equal_to_reference")))
                 if not ok]
        engine = ("V2 engine: " + ", ".join(wrong) if wrong else
                  f"vLLM {got.get('vllm')} V2 runner ({got.get('model_runner')}), CUDA graphs "
                  f"{got.get('cudagraph_mode')}, async scheduling on, no host sync in a step, tokens equal the reference")
    # the lane's files run whatever the probe found: a failing probe never hides what they would show
    failed = [name.removeprefix("vllm_v2-").removesuffix(".log")
              for name, cmd in v2_test_commands(python, n_gpus) if runner.run(cmd, env, logs / name, timeout) != 0]
    split = "" if n_gpus >= 2 else " (split tests deselected: one GPU)"
    probe_ok = got is not None and engine.startswith("vLLM ")
    reason = f"{engine}; V2 lane tests{split} " + ("passed" if not failed else "failed: " + ", ".join(failed))
    status = "passed" if probe_ok and not failed else "failed"
    return finish(check, t0, status, reason, log, {**(got or {}), "probe_passed": probe_ok, "failed_files": failed})
