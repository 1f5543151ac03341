"""The report: one entry per check (passed, failed or skipped, with the reason), the versions
found, the stack that was expected, the summary line, all in DIR/gpu_check.json.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .checkout import STACK

VERSIONS = ("torch", "vllm", "verl", "transformers", "flashinfer", "flash_attn", "python")  # read from the stack probe


@dataclass
class Check:
    name: str
    status: str = "skipped"  # passed | failed | skipped
    reason: str = ""
    seconds: float | None = None
    log: str | None = None
    details: dict = field(default_factory=dict)


def finish(check: Check, t0: float, status: str, reason: str, log: Path | None = None, details=None) -> Check:
    check.status, check.reason, check.seconds = status, reason, round(time.monotonic() - t0, 1)
    check.log, check.details = (str(log) if log else None), dict(details or {})
    return check


def now_utc() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def expected_stack(release) -> dict:
    """What the stack should be: one release of vllm_source/stack.py and the pins that go with it."""
    return {"vllm": release.vllm, "status": release.status, "torch": release.torch, "torch_cuda": release.torch_cuda,
            "flashinfer": release.flashinfer, "flashinfer_cubin": release.flashinfer_cubin, "verl": STACK.VERL,
            "transformers": STACK.TRANSFORMERS_RESOLVED}


def wheelhouse_summary(args) -> dict | None:
    if args.manifest is None:
        return None
    keys = ("vllm", "release_status", "torch_source", "python", "file_count", "total_bytes")
    return {"dir": str(args.wheelhouse.resolve()), **{k: args.manifest.get(k) for k in keys}}


def versions(gpus: list[dict], facts: dict) -> dict:
    """The driver's (from nvidia-smi) and the stack's (from the stack probe; None where it did not pass)."""
    return {"driver": gpus[0]["driver"], "driver_cuda": gpus[0]["driver_cuda"], "cuda": facts.get("torch_cuda"),
            **{k: facts.get(k) for k in VERSIONS}}


def summary_line(checks: list[Check], gpus: list[dict], versions: dict, report: Path) -> str:
    count = {s: sum(c.status == s for c in checks) for s in ("passed", "failed", "skipped")}
    failed = [c.name for c in checks if c.status == "failed"]
    gpu = f"{len(gpus)}x {gpus[0]['name']}" if gpus else "no GPU"
    stack = ", ".join(f"{k} {versions.get(k)}" for k in ("driver", "cuda", "torch", "vllm", "verl"))
    return (f"gpu check: {count['passed']} passed, {count['failed']} failed, {count['skipped']} skipped"
            + (f" (failed: {', '.join(failed)})" if failed else "") + f" | {gpu}, {stack} -> {report}")


def write_report(args, started: str, gpus: list[dict], checks: list[Check], facts: dict) -> str:
    """Write DIR/gpu_check.json; returns its summary line."""
    found = versions(gpus, facts)
    report = args.out / "gpu_check.json"
    line = summary_line(checks, gpus, found, report)
    report.write_text(json.dumps({
        "started_utc": started, "finished_utc": now_utc(),
        "model": args.model, "gpus": gpus, "versions": found, "expected_stack": expected_stack(args.release),
        "wheelhouse": wheelhouse_summary(args),
        "checks": [asdict(c) for c in checks], "summary": line}, indent=2) + "\n")
    return line
