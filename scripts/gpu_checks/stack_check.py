"""The stack check: the first interpreter whose torch sees CUDA and that imports vLLM and verl
(--python, $GPU_CHECK_PYTHON, --venv, the Python running this), or, where allowed, --venv built
with the tested stack from the index or with the wheelhouse's stack from its folder, no index.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

from .checkout import REPO, STACK, WHEELHOUSE
from .report import Check, finish
from .command_runner import Runner, probe

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


def usable(facts: dict | None) -> bool:
    return bool(facts and facts.get("cuda_available") and facts.get("device_count", 0) > 0
                and facts.get("vllm") and facts.get("verl"))


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


def candidates(args) -> list[str]:
    """The interpreters tried before installing; none with --wheelhouse (install from it first)."""
    if args.wheelhouse is not None:
        return []
    found = [args.python] if args.python else [os.environ.get("GPU_CHECK_PYTHON"), str(args.venv / "bin" / "python"),
                                               sys.executable]
    return [c for c in found if c]


def find_stack(args, runner: Runner, env: dict, logs: Path) -> tuple[str | None, dict | None, Check]:
    """The first usable interpreter among the candidates, installing one if allowed."""
    check, t0 = Check("stack"), time.monotonic()
    tried = []
    for python in candidates(args):
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
    return install_stack(args, runner, env, logs, check, t0)


def install_stack(args, runner: Runner, env: dict, logs: Path, check: Check,
                  t0: float) -> tuple[str | None, dict | None, Check]:
    """Build --venv (install_steps), then probe it as any other candidate."""
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
