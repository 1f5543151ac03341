"""The checks in their order, each run or skipped with the reason it could not run: not
selected, no usable stack, one GPU where it needs two, no training data for a launcher.
"""

from __future__ import annotations

from .engine_checks import SELECT, async_check, bench_check, pytest_check, v2_check
from .launchers import data_check, launcher_check
from .machine import gpu_env
from .report import Check
from .command_runner import Runner
from .stack_check import find_stack

CHECKS = ("stack", "async_scheduling", "vllm_engine", "vllm_compiled", "vllm_tp2", "vllm_v2", "bench_vllm",
          "launchers_data", "launch_tandem", "launch_tandem_split", "launch_vanilla", "launch_tandem_moving",
          "launch_tandem_score", "launch_tandem_transfer")
TWO_GPUS = ("vllm_tp2", "launch_tandem_split")


def wanted(args) -> list[str]:
    return [c for c in CHECKS if (args.only is None or c in args.only) and c not in args.skip]


def why_not(name: str, chosen: list[str], python: str | None, n_gpus: int, checks: dict[str, Check]) -> str | None:
    """Why the check cannot run here, or None when it can. vllm_v2 has its own interpreter (see v2_check)."""
    if name not in chosen:
        return "not selected (--only/--skip)"
    if name == "vllm_v2":  # its own interpreter: runs whether or not the V1 stack is usable
        return None
    if python is None:
        return "the GPU stack is not usable (see the stack check)"
    if name in TWO_GPUS and n_gpus < 2:
        return f"needs 2 GPUs; this machine has {n_gpus}"
    if name.startswith("launch_") and checks.get("launchers_data", Check("")).status != "passed":
        return "no training data (see launchers_data)"
    return None


def run_checks(args, gpus: list[dict], runner: Runner) -> tuple[list[Check], dict]:
    """Every check in order; the ones that cannot run are skipped with the reason."""
    logs, env, chosen = args.out / "logs", gpu_env(args.out), wanted(args)
    checks: dict[str, Check] = {}
    python, facts, checks["stack"] = find_stack(args, runner, env, logs)
    for name in CHECKS[1:]:
        reason = why_not(name, chosen, python, len(gpus), checks)
        if reason is not None:
            checks[name] = Check(name, reason=reason)
        elif name == "vllm_v2":  # its own interpreter: vLLM 0.32 cannot share a venv with verl 0.9.1
            checks[name] = v2_check(args.v2_python, runner, env, logs, args.timeout, len(gpus))
        elif name == "async_scheduling":
            checks[name] = async_check(python, runner, env, logs, args.timeout)
        elif name in SELECT:
            checks[name] = pytest_check(name, python, runner, env, logs, args.timeout)
        elif name == "bench_vllm":
            checks[name] = bench_check(python, args.out, runner, env, logs, args.timeout)
        elif name == "launchers_data":
            checks[name] = data_check(python, args.out, runner, env, logs, args.timeout)
        else:
            checks[name] = launcher_check(name, python, args, len(gpus), runner, env, logs)
    if "stack" not in chosen and checks["stack"].status == "passed":
        checks["stack"].reason += " (always run: the other checks need it)"
    return list(checks.values()), facts or {}
