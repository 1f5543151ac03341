"""The vLLM backend of tandem generation (the releases it runs on, and how they differ: `compat.py`).

Thin adapter over the shared core `tandem.process.authorship`: a logits processor keeps each
request's authorship state (keyed by the request key it carries in
`SamplingParams.extra_args`), and a wrapper model holds senior and junior so that every
row of the batch is sampled from its author's logits. See `vllm_source/README.md`.

Importing this package never imports vLLM; the modules that need it
(`logits_processor`, `logits_processor_v2`, `model`, `plugin`, and `engine.make_llm`) call `require_vllm()` and
raise `TandemError` with the install hint when it is absent.
"""

from vllm_source.requests import EXTRA_JUNIOR_SOLO, EXTRA_KEY, EXTRA_SOLO, parse_tandem_extra_args, tandem_extra_args
from vllm_source.runtime import VLLM_MISSING, require_vllm

__all__ = [
    "EXTRA_JUNIOR_SOLO",
    "EXTRA_KEY",
    "EXTRA_SOLO",
    "VLLM_MISSING",
    "parse_tandem_extra_args",
    "require_vllm",
    "tandem_extra_args",
]
