"""vLLM general plugin: registers `TandemForCausalLM` (and its split twin) in every vLLM process.

vLLM calls `register()` in each process it starts (API server, engine core, workers)
when the package declares the entry point

    [project.entry-points."vllm.general_plugins"]
    tandem = "vllm_source.plugin:register"

Registration is lazy (a "module:Class" string), so vLLM imports the model module only
when an engine asks for the architecture. In a CPU process asked for live weights
(`cpu_weights.ENV`, set by verl's CPU platform for rollout servers) it also installs
the live-weight linear layers that weight syncs need, and where `$TANDEM_ENGINE_REPORT` names
a file, the hook that has each worker record the model runner it decodes on
(`vllm_source/model_runner.py`). `require_vllm` refuses a vLLM release `compat.py` does not know here, in
every engine process of both arms, before any weights load.
"""

from __future__ import annotations

import os

from vllm_source import cpu_weights
from vllm_source.engine_config import ARCHITECTURE, MODEL_CLASS
from vllm_source.placement import SPLIT_ARCHITECTURE, SPLIT_MODEL_CLASS
from vllm_source.model_runner import REPORT_ENV, install_engine_report
from vllm_source.runtime import require_vllm


def register() -> None:
    vllm = require_vllm()
    for arch, model_class in ((ARCHITECTURE, MODEL_CLASS), (SPLIT_ARCHITECTURE, SPLIT_MODEL_CLASS)):
        if arch not in vllm.ModelRegistry.get_supported_archs():
            vllm.ModelRegistry.register_model(arch, model_class)
    if cpu_weights.wanted():
        cpu_weights.apply()
    if os.environ.get(REPORT_ENV):
        install_engine_report(os.environ[REPORT_ENV])
