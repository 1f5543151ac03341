"""Launcher preflight: refuse, before Ray starts, an actor this Python cannot build.

    python verl/preflight.py key=value ...     (the launcher's full override list)

verl builds the FSDP actor (and the reference policy) with
`actor_rollout_ref.model.override_config.attn_implementation`, defaulting to
`flash_attention_2` when the key is absent (verl 0.9.1 `workers/config/model.py`). A
missing or mis-built kernel package otherwise surfaces minutes later, deep inside a Ray
worker. This check imports what the asked-for implementation needs and exits 0, or
prints one line naming the key and the fix and exits 2. It also refuses a vLLM release outside
`vllm_source/stack.py` or a setting that would put an arm on vLLM's V2 model runner
(`vllm_problem`), a trl that verl's actor cannot use (`trl_conflict`), and with
VERL_PLATFORM=cpu a config the CPU platform cannot run (`cpu_problem`). It starts no Ray;
only the CPU check imports verl.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
import warnings

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


def vllm_problem() -> str | None:
    """None when the installed vLLM is a release we run on and both arms would decode on V1, else the error.

    Reads the distribution's version (no vLLM import); `deepscaler_common.sh` sets
    `$VLLM_USE_V2_MODEL_RUNNER=0` unless the user set it, so only a user's V2 request is refused.
    """
    from importlib.metadata import PackageNotFoundError, version

    from tandem.errors import TandemError
    from vllm_source.model_runner import pin_v1_runner
    from vllm_source.compat import check_vllm_version
    from vllm_source.runtime import VLLM_MISSING

    try:
        check_vllm_version(version("vllm"))
        pin_v1_runner(dict(os.environ))
    except PackageNotFoundError:
        return f"error: {VLLM_MISSING}"
    except TandemError as exc:
        return f"error: {exc}"
    return None


def trl_conflict() -> str | None:
    """None unless a trl is importable that lacks the class verl's actor imports from it.

    verl 0.9.1's FSDP actor imports trl's `AutoModelForCausalLMWithValueHead` whenever trl
    is installed (`verl/models/transformers/monkey_patch.py`); trl 1.16, the `hf-trl`
    extra, lacks it, so the actor would fail inside a Ray worker.
    """
    if importlib.util.find_spec("trl") is None:
        return None
    for module in ("trl.experimental.ppo", "trl"):
        try:
            with warnings.catch_warnings():  # trl warns on importing its experimental package
                warnings.simplefilter("ignore")
                if hasattr(importlib.import_module(module), "AutoModelForCausalLMWithValueHead"):
                    return None
        except Exception:  # absent submodule, or a trl that fails to import: verl would fail the same way
            continue
    return ("error: trl is installed here without AutoModelForCausalLMWithValueHead, which verl 0.9.1's FSDP actor "
            "imports whenever trl is present; pip uninstall trl in this environment (keep the hf-trl extra in another)")


def cpu_problem(overrides: list[str]) -> str | None:
    """With VERL_PLATFORM=cpu, the CPU platform's refusal of this run's verl settings, else None.

    Composes verl's own ppo_trainer with the verl keys of the override list (not our
    `tandem.` and `partner_reward.` sections): one check serves both launchers.
    """
    if os.environ.get("VERL_PLATFORM", "").strip().lower() != "cpu":
        return None
    from hydra import compose, initialize_config_module

    from tandem.errors import TandemError
    from tandem_verl import cpu_platform

    verl_keys = [o for o in overrides if not o.lstrip("+~").startswith(("tandem.", "partner_reward.", "hydra."))]
    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        config = compose(config_name="ppo_trainer", overrides=verl_keys)
    try:
        cpu_platform.check_cpu_config(config)
    except TandemError as exc:
        return f"error: {exc}"
    return None


def main(argv: list[str]) -> int:
    problem = check(argv) or vllm_problem() or trl_conflict() or cpu_problem(argv)
    if problem:
        print(problem, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
