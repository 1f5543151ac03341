"""Launcher preflight: refuse, before Ray starts, an actor attention implementation this Python cannot import.

    python verl/preflight.py key=value ...     (the launcher's full override list)

verl builds the FSDP actor (and the reference policy) with
`actor_rollout_ref.model.override_config.attn_implementation`, defaulting to
`flash_attention_2` when the key is absent (verl 0.9.1 `workers/config/model.py`). A
missing or mis-built kernel package otherwise surfaces minutes later, deep inside a Ray
worker. This check imports what the asked-for implementation needs and exits 0, or
prints one line naming the key and the fix and exits 2. It needs neither verl nor Ray.
"""

from __future__ import annotations

import importlib
import sys

KEY = "actor_rollout_ref.model.override_config.attn_implementation"
VERL_DEFAULT = "flash_attention_2"
# implementation -> (module it imports, the pip distribution that provides it)
NEEDS: dict[str, tuple[str, str] | None] = {
    "sdpa": None,
    "eager": None,
    "flex_attention": None,
    "flash_attention_2": ("flash_attn", "flash-attn"),
    "flash_attention_3": ("flash_attn_interface", "flash-attn's hopper build (flash_attn_interface)"),
}
HUB_KERNELS = ("kernels", "kernels")  # "owner/repo" names load a kernel from the Hub through `kernels`


def requested(overrides: list[str]) -> str:
    """The attention implementation the actor gets: the last override of KEY, else verl's default."""
    value = VERL_DEFAULT
    for arg in overrides:
        key, _, val = arg.partition("=")
        if key.lstrip("+~") == KEY:
            value = VERL_DEFAULT if key.startswith("~") else val.strip().strip("'\"")
    return value


def check(overrides: list[str]) -> str | None:
    """None when the requested implementation is importable, else the one-line error."""
    impl = requested(overrides)
    if impl in NEEDS:
        need = NEEDS[impl]
    elif "/" in impl:
        need = HUB_KERNELS
    else:
        return (f"error: {KEY}={impl} is not an attention implementation transformers knows; use one of "
                f"{', '.join(NEEDS)}")
    if need is None:
        return None
    module, dist = need
    try:
        importlib.import_module(module)
    except Exception as exc:  # ImportError, or an ABI mismatch surfacing as OSError/RuntimeError
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return (f"error: {KEY}={impl} needs {dist}, which this Python cannot import ({first}); install one built "
                f"for this torch and CUDA (Dockerfile.repro carries it) or pass ++{KEY}=sdpa")
    return None


def main(argv: list[str]) -> int:
    problem = check(argv)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
