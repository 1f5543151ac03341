"""tandem-rlvr core: the tandem process, the reference dual-decoder engine, GRPO math.

Backend-free: the vLLM backend (`vllm_source`), the verl adapter (`tandem_verl`)
and the eval suite (`tandem_eval`) all import this package; none re-implements it.
Start with `tandem.process.authorship` (the state machine) and `tandem.reference.engine` (co-generation).
"""

__version__ = "0.1.0"
