"""main(): the arguments, the GPU, the wheelhouse joined and checked, the checks, the report.

Exit 0 when no check failed, 1 when one did, 2 (one line on stderr, no report) when the
arguments are wrong, no NVIDIA GPU is visible, its driver is too old for the stack's CUDA
(checked before any install) or the wheelhouse cannot serve.
"""

from __future__ import annotations

import os
import sys

from .arguments import UsageError, parse_args
from .checkout import WHEELHOUSE
from .checks import run_checks
from .machine import detect_gpus, driver_problem, forward_compat_driver
from .report import now_utc, write_report
from .command_runner import Runner


def prepare(argv: list[str]):
    """(args, gpus), or UsageError: no work starts on a machine that cannot run the checks."""
    args = parse_args(argv)
    gpus = detect_gpus(os.environ.get("GPU_CHECK_NVIDIA_SMI", "nvidia-smi"))
    if not gpus:
        raise UsageError("gpu_check: no NVIDIA GPU found (nvidia-smi lists none); this command validates a GPU "
                         "machine; on CPU run bash scripts/test_scale.sh")
    problem = driver_problem(gpus[0]["driver"], gpus[0]["driver_cuda"], args.release.torch_cuda,
                             forward_compat_driver(os.environ.get("LD_LIBRARY_PATH", "")))
    if problem:  # first: torch would see no GPU, and the stack check would reinstall the same stack and fail
        raise UsageError(f"gpu_check: {problem}")
    if args.wheelhouse is not None:
        print(f"gpu_check: joining and checking the wheelhouse {args.wheelhouse} (sha256) ...", flush=True)
        try:
            WHEELHOUSE.join(args.wheelhouse.resolve())
        except WHEELHOUSE.WheelhouseError as e:
            raise UsageError(f"gpu_check: --wheelhouse: {e}") from None
    return args, gpus


def main(argv: list[str] | None = None, runner: Runner | None = None) -> int:
    try:
        args, gpus = prepare(sys.argv[1:] if argv is None else argv)
    except UsageError as e:
        print(e, file=sys.stderr)
        return 2
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    started = now_utc()
    checks, facts = run_checks(args, gpus, runner or Runner())
    line = write_report(args, started, gpus, checks, facts)
    print(line)
    return 1 if any(c.status == "failed" for c in checks) else 0
