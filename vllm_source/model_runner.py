"""Which vLLM model runner an engine decodes on: one runner for both arms, read back from the engine.

Which runner that is, for the installed vLLM, is `compat.tandem_runner`'s to say (V2 where
vLLM's V2 runner has the processor interface the tandem engine implements: 0.31 on; V1 on
0.24 and 0.28). Left alone, a vLLM picks the runner per architecture and feature (0.28:
V2 for dense models where Triton is available, V1 for an engine given custom processors),
so the GRPO arm could decode on another runner than the tandem arm. Every release decides
by `$VLLM_USE_V2_MODEL_RUNNER` first (`VllmConfig.use_v2_model_runner`), so `pin_runner`
sets it in every process that starts an engine; a user's setting that asks for the other
runner is refused in one line. `pin_v1_runner` is the verl path's (verl 0.9.1 runs vLLM 0.28
only).

The runner an engine *actually* used is read from its workers: the class of
`worker.model_runner`, through `LLM.collective_rpc` and the worker extension below for the
project's own engines (a method name travels to worker processes; a function would need
vLLM's insecure pickle fallback), or, for
verl's rollout servers, through a JSON line each worker appends to `$TANDEM_ENGINE_REPORT`
once its KV cache is set up (`install_engine_report`, applied by the vLLM plugin only when
that variable is set; listed in model_spec/SCALE.md, "Patches").
"""

from __future__ import annotations

import json
import os

from tandem.errors import TandemError

from vllm_source.compat import RUNNER_RELEASE, runner_generation, tandem_runner

RUNNER_ENV = "VLLM_USE_V2_MODEL_RUNNER"
REPORT_ENV = "TANDEM_ENGINE_REPORT"
_FALSE = ("0", "false", "False", "FALSE", "")


def pin_runner(vllm_version: str | None = None, environ: dict | None = None, runner: str | None = None) -> str:
    """Set `$VLLM_USE_V2_MODEL_RUNNER` so every engine started from here decodes on the runner the
    tandem engine runs on with the installed vLLM (`runner`, default `compat.tandem_runner()`);
    returns 'v1' or 'v2'. `vllm_version` only names the release in a refusal.

    A setting that asks for the other runner is refused in one line: the tandem arm could not
    decode there, or the two arms of a comparison would decode on different runners.
    """
    if vllm_version is None:
        import vllm

        vllm_version = vllm.__version__
    env = os.environ if environ is None else environ
    want = runner or tandem_runner()
    value = env.get(RUNNER_ENV)
    if value is not None and ("v1" if value in _FALSE else "v2") != want:
        if want == "v1":
            raise TandemError(
                f"{RUNNER_ENV}={value} asks for vLLM {vllm_version}'s V2 model runner, which runs no custom logits "
                f"processors there: the tandem arm cannot decode on it; unset {RUNNER_ENV} (or install "
                f"vllm=={RUNNER_RELEASE['v2']}, whose V2 runner the tandem engine runs on)")
        raise TandemError(
            f"{RUNNER_ENV}={value} asks for vLLM {vllm_version}'s V1 model runner, deprecated there; the tandem "
            f"engine runs on its V2 runner: unset {RUNNER_ENV} (or install vllm=={RUNNER_RELEASE['v1']} for V1)")
    env[RUNNER_ENV] = "1" if want == "v2" else "0"
    return want


def pin_v1_runner(environ: dict | None = None) -> None:
    """Set `$VLLM_USE_V2_MODEL_RUNNER=0` so that every engine started from here decodes on V1.

    Refuses a setting that asks for V2: the tandem arm cannot run there, so the two arms of
    a comparison would decode on different runners.
    """
    env = os.environ if environ is None else environ
    value = env.get(RUNNER_ENV)
    if value is not None and value not in _FALSE:
        raise TandemError(
            f"{RUNNER_ENV}={value} asks for vLLM's V2 model runner, which runs no custom logits processors: the "
            f"tandem arm cannot decode there and the GRPO arm would run on another runner; unset {RUNNER_ENV}"
        )
    env[RUNNER_ENV] = "0"


def worker_runner(worker) -> dict:
    """What one vLLM worker decodes with: vLLM's version, its runner class and generation.

    Runs inside the worker (a `collective_rpc` callable, or the report hook below).
    """
    import vllm

    cls = type(worker.model_runner)
    return {"vllm": vllm.__version__, "model_runner": f"{cls.__module__}.{cls.__qualname__}",
            "runner": runner_generation(cls), "runner_env": os.environ.get(RUNNER_ENV), "pid": os.getpid()}


EXTENSION = "vllm_source.model_runner.RunnerReport"


class RunnerReport:
    """vLLM worker extension (`worker_extension_cls=EXTENSION`): the worker reports its own runner."""

    def tandem_model_runner(self) -> dict:
        return worker_runner(self)


def engine_runners(llm) -> list[dict]:
    """`worker_runner` of every worker of a `vllm.LLM` built with `worker_extension_cls=EXTENSION`."""
    return list(llm.collective_rpc("tandem_model_runner"))


def one_runner(records: list[dict]) -> dict:
    """The single (vllm, runner, model_runner) the records agree on; a `TandemError` if they disagree or are none."""
    kinds = {(r["vllm"], r["runner"], r["model_runner"]) for r in records}
    if len(kinds) != 1:
        raise TandemError(f"expected one vLLM model runner across the engine's workers, found {sorted(kinds) or 'none'}")
    vllm_version, runner, model_runner = kinds.pop()
    return {"vllm": vllm_version, "runner": runner, "model_runner": model_runner}


def install_engine_report(path: str) -> None:
    """Make every vLLM worker of this process append its `worker_runner` to `path` once its KV cache exists.

    Wraps `WorkerWrapperBase.initialize_from_config` (the last step of a worker's start, after
    its model runner is built); applied once per process.
    """
    from vllm.v1.worker.worker_base import WorkerWrapperBase

    original = WorkerWrapperBase.initialize_from_config
    if getattr(original, "_tandem_engine_report", False):
        return

    def initialize_from_config(self, *args, **kwargs):
        result = original(self, *args, **kwargs)
        record = {**worker_runner(self.worker), "rank": getattr(self, "global_rank", None)}
        with open(path, "a") as f:  # one short line per worker: appends do not interleave
            f.write(json.dumps(record) + "\n")
        return result

    initialize_from_config._tandem_engine_report = True
    WorkerWrapperBase.initialize_from_config = initialize_from_config


def read_engine_report(path) -> list[dict]:
    """The records a run's workers wrote to `path` (see `install_engine_report`)."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]
