"""What gpu_check must prove before its checks can be trusted on a GPU (issue 61, deliverable 3),
each with whether it is implemented: `--help` prints this list, and scripts/gpu_smoke.sh --dry-run
writes it into its JSON. An item not implemented yet is said to be so, never reported as passed.
"""

from __future__ import annotations

import textwrap

IMPLEMENTED, NOT_YET = "implemented", "not implemented yet"

# (name, status, what it proves, where it lives or what is missing)
PROOFS = (
    ("driver_first", IMPLEMENTED,
     "the driver is checked before anything is installed: one line naming R580+ (or the CUDA forward-compatibility "
     "package) when it cannot run the stack's cu130 build",
     "machine.driver_problem, called by cli.prepare; exit 2"),
    ("fp32_ieee_everywhere", IMPLEMENTED,
     "every fp32 comparison runs with TRITON_F32_DEFAULT=ieee (V1 and V2 checks, probes and launchers alike)",
     "machine.FP32_ENV in gpu_env"),
    ("bf16_default_backend", NOT_YET,
     "bf16 with the release's default attention backend (FA3 on SM90) and sampler compared with the reference engine "
     "at a stated tolerance on a model with a real vocabulary (Qwen3-0.6B where present)",
     "every engine comparison today is fp32 on the tiny zoo (TRITON_ATTN)"),
    ("cuda_graphs_replayed", NOT_YET,
     "CUDA graphs asserted captured and replayed for a piecewise (prefill/mixed) and a full (pure decode) batch, "
     "each compared with eager",
     "vllm_compiled and vllm_v2 read cudagraph_mode != NONE only"),
    ("async_vs_sync_tokens", NOT_YET,
     "async scheduling compared with sync scheduling on generated tokens",
     "async_scheduling reads the flags and generates nothing"),
    ("sampling_statistics", NOT_YET,
     "temperature with top-k/top-p checked statistically against the reference engine",
     "only greedy tokens are compared"),
    ("scheduler_paths", NOT_YET,
     "preemption, a prefix-cache hit and chunked prefill in one probe",
     "no probe forces them"),
    ("probe_never_stops_others", IMPLEMENTED,
     "a failing probe never stops the other checks (vllm_v2 runs every V2 lane file after a failed engine probe)",
     "checks.run_checks, engine_checks.v2_check; the stack check alone gates the V1 checks, which need it"),
    ("v2_venv_has_its_tests", IMPLEMENTED,
     "the V2 venv the skip message asks for has what the V2 lane's tests need (the eval extra and pytest)",
     "engine_checks.v2_venv_command"),
    ("merge_memory", NOT_YET,
     "the tandem merge's memory (about 12 bytes x rows x vocabulary) reserved or profiled, with the figure in "
     "gpu_check.json",
     "vLLM's profile run never sees the merge"),
)


def help_text() -> str:
    """The list as --help prints it: one line per proof with its status."""
    width = max(len(name) for name, *_ in PROOFS)
    lines = ["What gpu_check proves (issue 61, deliverable 3); the ones not implemented yet prove nothing yet:"]
    for name, status, what, _ in PROOFS:
        lines += textwrap.wrap(f"[{status}] {what}", width=104, initial_indent=f"  {name.ljust(width)}  ",
                               subsequent_indent=" " * (width + 4))
    return "\n".join(lines)


def as_records() -> list[dict]:
    """The list as JSON records (scripts/gpu_smoke.sh --dry-run)."""
    return [{"name": n, "status": s, "proves": w, "where": where} for n, s, w, where in PROOFS]
