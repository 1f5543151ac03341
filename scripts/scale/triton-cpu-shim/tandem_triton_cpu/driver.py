"""The backend's driver half: always active, its device is the CPU."""

import torch
from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase


class InterpreterCPUDriver(DriverBase):
    """What Triton and vLLM ask a driver: is it active, which target and torch device."""

    @classmethod
    def is_active(cls) -> bool:
        return True

    def map_python_to_cpp_type(self, ty: str) -> str:
        raise RuntimeError("this Triton 'cpu' backend launches no compiled kernels")

    def get_current_target(self) -> GPUTarget:
        return GPUTarget("cpu", 0, 0)

    def get_active_torch_device(self) -> torch.device:
        return torch.device("cpu")

    def get_benchmarker(self):
        raise RuntimeError("this Triton 'cpu' backend has no benchmarker")

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device=None) -> int:
        return 0
