"""An offline wheelhouse: every wheel the GPU stack needs, in one folder, for a node without internet.

    bash scripts/gpu_wheelhouse.sh --out DIR [--vllm X.Y.Z] [--python 3.12] [--present FILE] [--part-mib N]
    bash scripts/gpu_wheelhouse.sh --out DIR --resolve-only [--vllm X.Y.Z] [--python 3.12] [--present FILE]
    bash scripts/gpu_wheelhouse.sh --join DIR

Build it on any machine with internet and a Python 3.11+; the target's Python need not be
there. It resolves the whole closure, for CPython X.Y (--python) on manylinux x86_64 with
glibc 2.34 or newer (--platform x86_64-manylinux_2_34: Ubuntu 22.04+, RHEL 9+), of

  * the GPU stack of vllm_source/stack.py: torch, vLLM, flashinfer-python (and
    flashinfer-cubin where the release pins it), verl without its [vllm] extra, transformers;
    with --vllm an engine-only release (0.32.0, 0.33.0: vLLM's V2 model runner, which verl
    0.9.1 cannot install beside), the same without verl, at that release's transformers;
  * this package's dependencies and its dev, eval and wandb extras (pyproject.toml), its
    build requirements (for an editable install with no index) and pip;

then downloads every wheel the target lacks into DIR (pip download --no-deps with the
target's tags, each file pinned to the sha256 the resolver saw) and writes DIR/lock.txt (the
closure, with hashes) and DIR/manifest.json: the resolver and its version, the vLLM release
and whether it is tested or accepted, where torch comes from (PyPI's build is the CUDA one
stack.py names), and per file its name, version, sha256 and size, with the total.

--resolver uv (the default where it can be had) runs `uv pip compile --python-version X.Y
--python-platform ...` with uv pinned to one version, fetched once from PyPI into
~/.cache/tandem-rlvr (or $GPU_WHEELHOUSE_UV, a uv of that version). --resolver pip is the
interpreter route: pip's own resolver, which needs a CPython X.Y on Linux x86_64 here
(pythonX.Y on PATH, or the one running this script). A dependency with only an sdist is
built here into a pure wheel; one that builds for this machine only is refused.

--resolve-only writes DIR/lock.txt and DIR/plan.json (the files a build would fetch, with
the index's sizes) and downloads nothing.

--present FILE is a `pip freeze` of the target (e.g. a base image that already holds
torch). What it already has at the resolved version is skipped, and its pins are given to
the resolver as constraints (when they conflict with the stack, only torch's is kept, and
the manifest says so). Without --vllm, a torch in FILE chooses the vLLM release
(stack.release_for_torch: torch 2.13 -> vLLM 0.28, torch 2.11 -> vLLM 0.24); a torch or vllm
no release pairs is refused, as is a torch in FILE other than the one --vllm's release pins.

--part-mib N cuts every file larger than N MiB into DIR/FILE.part000, .part001, ...
(for media or transfers with a size limit); --join DIR puts them back, checks every part
and every file against the manifest's sha256 and removes the parts. Then, on the target:

    pip install --no-index --find-links DIR --no-build-isolation <stack> -e .[dev,eval,wandb]

or `bash scripts/gpu_check.sh --wheelhouse DIR --out OUT`, which does that into .venv-gpu.
An engine-only wheelhouse (--vllm 0.33.0) goes into a venv of its own, whose python is
gpu_check's --v2-python.
Bad input fails in one line naming the fix, before any download; exit 2. Standard library
only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .basics import LOCK, MANIFEST, MIB, PLAN, WheelhouseError
from .build import build, check_out_dir, resolve_only
from .parts import join
from .pip_route import Pip, resolver_python
from .target import DEFAULT_PLATFORM, DEFAULT_PYTHON, Target, plan_target
from .uv import UV_VERSION, Uv, UvUnavailable, uv_binary


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
    ap.add_argument("--vllm", metavar="X.Y.Z",
                    help="the vLLM release, exactly as vllm_source/stack.py lists it (default: the one --present's "
                         "torch pins, else the tested one); 0.32.0 and 0.33.0 are the V2 engine's, without verl")
    ap.add_argument("--python", metavar="X.Y",
                    help=f"the target machine's Python (default {DEFAULT_PYTHON}, Ubuntu 24.04's and the image's)")
    ap.add_argument("--platform", metavar="TAG",
                    help=f"the target's platform as x86_64-manylinux_2_N, N its glibc (default {DEFAULT_PLATFORM})")
    ap.add_argument("--present", type=Path, metavar="FILE",
                    help="`pip freeze` of the target: skip what it already has at the resolved version; its "
                         "torch chooses the vLLM release (torch 2.13 -> 0.28, torch 2.11 -> 0.24)")
    ap.add_argument("--resolver", choices=("auto", "uv", "pip"),
                    help=f"uv {UV_VERSION} (needs no target interpreter), pip (run by a CPython X.Y here), or "
                         "auto: uv where it can be had, else pip")
    ap.add_argument("--resolve-only", action="store_true",
                    help=f"write DIR/{LOCK} and DIR/{PLAN} (the files a build would fetch); download nothing")
    ap.add_argument("--part-mib", type=int, metavar="N",
                    help="cut every file larger than N MiB into FILE.part000, .part001, ... (--join undoes it)")
    args = ap.parse_args(argv)
    check_combination(args)
    args.python, args.platform = args.python or DEFAULT_PYTHON, args.platform or DEFAULT_PLATFORM
    args.resolver = args.resolver or "auto"
    return args


def check_combination(args: argparse.Namespace) -> None:
    building = (args.vllm, args.python, args.present, args.part_mib, args.platform, args.resolver,
                args.resolve_only or None)
    if args.join and any(value is not None for value in building):
        raise WheelhouseError("--join takes only the wheelhouse folder: drop --vllm, --python, --present, --part-mib, "
                              "--platform, --resolver and --resolve-only")
    if args.part_mib is not None and args.part_mib < 1:
        raise WheelhouseError(f"--part-mib {args.part_mib}: give a size of at least 1 MiB")
    if args.resolve_only and args.part_mib is not None:
        raise WheelhouseError("--resolve-only downloads nothing, so there is nothing to cut: drop --part-mib")


def make_resolver(choice: str, target: Target):
    """uv when asked for or when it can be had (auto), else pip run by a CPython of the target's version."""
    if choice in ("uv", "auto"):
        try:
            return Uv(uv_binary(), target.platform)
        except UvUnavailable as e:
            if choice == "uv":
                raise
            try:
                executable = resolver_python(target.python)
            except WheelhouseError:
                raise e from None
            print(f"gpu_wheelhouse: note: {e}; resolving with pip run by {executable}", flush=True)
            return Pip(executable=executable, platforms=target.platforms)
    return Pip(executable=resolver_python(target.python), platforms=target.platforms)


def summary(out: Path, manifest: dict) -> str:
    torch = "on the target" if manifest["torch_source"] == "present" else "in the wheelhouse"
    parts = sum(len(e.get("parts") or []) for e in manifest["files"])
    return (f"wheelhouse: {manifest['file_count']} files, {manifest['total_bytes'] / 2**30:.2f} GiB"
            + (f" ({parts} parts)" if parts else "")
            + f", vLLM {manifest['vllm']} ({manifest['release_status']}), torch {manifest['torch']} {torch}, "
            f"{len(manifest['skipped_present'])} present on the target skipped -> {out / MANIFEST}")


def plan_summary(out: Path, plan: dict) -> str:
    size = "size unknown" if plan["total_bytes"] is None else f"{plan['total_bytes'] / MIB:.0f} MiB"
    resolver = plan["resolver"]
    return (f"resolve only: {plan['file_count']} files to fetch ({size}), vLLM {plan['vllm']} "
            f"({plan['release_status']}), {len(plan['skipped_present'])} present on the target, resolved by "
            f"{resolver['name']} {resolver['version']} in {plan['resolve_seconds']} s -> {out / LOCK}, {out / PLAN}")


def main(argv: list[str] | None = None, resolver=None) -> int:
    try:
        args = parse_args(sys.argv[1:] if argv is None else argv)
        if args.join:
            manifest = join(args.join.resolve())
            print(f"wheelhouse {args.join}: {manifest['file_count']} files joined and checked against "
                  f"{MANIFEST} (sha256); install with pip install --no-index --find-links {args.join}")
            return 0
        target = plan_target(args.python, args.present, platform=args.platform, vllm=args.vllm)
        out = args.out.resolve()
        check_out_dir(out)
        resolver = resolver or make_resolver(args.resolver, target)
        if args.resolve_only:
            print(plan_summary(out, resolve_only(out, target, resolver)))
            return 0
        manifest = build(out, target, resolver, args.part_mib * MIB if args.part_mib else None)
    except WheelhouseError as e:
        print(f"gpu_wheelhouse: {e}", file=sys.stderr)
        return 2
    print(summary(out, manifest))
    return 0
