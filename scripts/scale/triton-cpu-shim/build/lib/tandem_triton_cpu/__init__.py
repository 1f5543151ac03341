"""Triton's `cpu` backend entry for the V2 lane: kernels run in Triton's interpreter.

Triton imports this package while it discovers its backends (`triton.backends`), before any
kernel is decorated, so the interpreter switch set here reaches every `@triton.jit` of vLLM
(Triton reads TRITON_INTERPRET when a kernel is decorated). A value the user set wins.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")
