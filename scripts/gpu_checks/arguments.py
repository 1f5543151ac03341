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
  vllm_v2           the tandem engine on vLLM's V2 model runner, in the interpreter of --v2-python (a venv with
                    `pip install -e '.[vllm-v2,eval]' pytest` or `'.[vllm-latest,eval]' pytest`; skipped
                    without one; runs even where the V1 stack is unusable): with CUDA graphs and async
                    scheduling on, the runner reported by the workers is V2 and greedy tokens and masks equal
                    the reference engine's; then each V2 lane file (tests/test_scale_vllm_v2_*.py) in its own
                    pytest process (also after a failed engine probe), split tests deselected below 2 GPUs;
                    the engine probe with VLLM_GPU_SYNC_CHECK=error (no host sync in vLLM's step)
  bench_vllm        scripts/bench_vllm.py --quick (solo vs tandem throughput, JSON kept)
  launchers_data    a tiny DeepScaleR slice from the hub (64 training, 16 validation problems)
  launch_tandem     the tandem launcher: 2 GRPO steps on --model, then a 3rd resumed from the checkpoint
  launch_tandem_split  the tandem launcher with tandem.placement=split (senior and junior on two GPUs); 2+ GPUs only
  launch_vanilla    the same for the vanilla launcher
  launch_tandem_moving  launch_tandem with tandem.junior_update=sync:1: the junior follows the senior in the
                    sleeping (level 2) engine (another junior each step, equal to the senior after each copy),
                    and the resumed launch rebuilds step 2's junior (the same checksum)
  launch_tandem_score   launch_tandem with partner_reward.weight=0.1: verl's reference worker scores on the GPU
  launch_tandem_transfer  launch_tandem with partner_reward.kind=transfer: the junior continues each training
                    response's prefix as a junior-solo request in the GPU engine; reward = verifier + 0.5 R_transfer

Before any of them the driver is read from nvidia-smi: one that cannot run the stack's CUDA
(R580+ for cu130, or the forward-compatibility package) is refused in one line, before any
install. Every check runs with TRITON_F32_DEFAULT=ieee (fp32 Triton dots, not TF32). Each
entry is passed, failed or skipped (with the reason); nothing is reported as passed that did
not run. Logs go to DIR/logs/. Exit: 0 when no check failed, 1 when one did,
2 (one line) when no NVIDIA GPU is visible, its driver is too old, the arguments are wrong or
the wheelhouse is missing, incomplete or differs from its manifest. The report's expected_stack is the
release of vllm_source/stack.py that was to be installed. Only the standard library is
used here; the checks run in the stack's Python.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .checkout import REPO, STACK, WHEELHOUSE
from . import proofs
from .checks import CHECKS


class UsageError(Exception):
    """Bad arguments or no GPU: one line, exit 2."""


class OneLineParser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"gpu_check: {message} (see --help)")


def parser() -> OneLineParser:
    """The flags; this module's docstring is --help's text."""
    ap = OneLineParser(prog="scripts/gpu_check.sh", description=__doc__.splitlines()[0],
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="\n".join(__doc__.splitlines()[2:]) + f"\nvLLM releases of stack.py: {STACK.describe()}"
                       + "\n\n" + proofs.help_text())
    ap.add_argument("--out", required=True, type=Path, help="report directory (DIR/gpu_check.json, DIR/logs/)")
    ap.add_argument("--python", default=None, help="the GPU stack's interpreter (default: found, else installed)")
    ap.add_argument("--venv", type=Path, default=REPO / ".venv-gpu", help="where to install the stack if none is found")
    ap.add_argument("--no-install", action="store_true", help="never install; fail the stack check instead")
    ap.add_argument("--wheelhouse", type=Path, default=None, metavar="DIR",
                    help="install the stack and this package into --venv from DIR (scripts/gpu_wheelhouse.sh) with "
                         "no index, then run the checks in it")
    ap.add_argument("--v2-python", default=os.environ.get("GPU_CHECK_V2_PYTHON"), metavar="PY",
                    help="interpreter of a venv with vLLM 0.32 or 0.33 (pip install -e '.[vllm-v2,eval]' pytest, or "
                         "'.[vllm-latest,eval]' pytest) for the vllm_v2 check")
    ap.add_argument("--model", default="Qwen/Qwen3-0.6B", help="checkpoint for the launcher runs (hub name or path)")
    ap.add_argument("--only", nargs="+", default=None, metavar="NAME", help=f"run only these of: {', '.join(CHECKS)}")
    ap.add_argument("--skip", nargs="+", default=[], metavar="NAME", help="skip these checks")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per command (default 1800)")
    return ap


def parse_args(argv: list[str]) -> argparse.Namespace:
    """The flags, checked; with --wheelhouse, its manifest and release too (args.manifest, args.release)."""
    args = parser().parse_args(argv)
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
    engine = STACK.release_named(manifest["vllm"])
    if engine is not None and not engine.with_verl:
        raise UsageError(f"gpu_check: --wheelhouse {folder} holds vLLM {engine.vllm}, an engine-only release "
                         "(no verl): install it into a venv of its own (pip install --no-index --find-links "
                         f"{folder} --no-build-isolation {' '.join(manifest['stack'])} -e .[{','.join(manifest['extras'])}] "
                         "pytest) and pass that venv's python as --v2-python")
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
