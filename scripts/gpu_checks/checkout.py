"""What gpu_check reads from this checkout, each file loaded by path so that nothing else of the
project is imported: scripts/gpu_wheelhouse.py (the manifest, the join), vllm_source/stack.py
(the one home of the stack's pins, read through the wheelhouse) and scripts/scale/smoke_summary.py.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def load_by_path(name: str, path: Path):
    """A module of this checkout loaded from its file, so that nothing else of the package is imported."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


WHEELHOUSE = load_by_path("_tandem_gpu_wheelhouse", REPO / "scripts" / "gpu_wheelhouse.py")
STACK = WHEELHOUSE.load_stack()  # vllm_source/stack.py: the one home of the stack's pins


def load_summary():
    """scripts/scale/smoke_summary.py, which reads a launcher run's files (a fresh module each time)."""
    spec = importlib.util.spec_from_file_location("smoke_summary", REPO / "scripts" / "scale" / "smoke_summary.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
