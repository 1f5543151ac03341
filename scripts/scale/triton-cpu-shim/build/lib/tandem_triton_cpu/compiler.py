"""The backend's compiler half: there is none; the interpreter runs every kernel."""

from triton.backends.compiler import BaseBackend


class InterpreterOnlyBackend(BaseBackend):
    """Refuses to compile: with TRITON_INTERPRET=1 Triton never asks it to."""

    @staticmethod
    def supports_target(target) -> bool:
        return target.backend == "cpu"

    def hash(self) -> str:
        return "tandem-triton-cpu-interpreter"

    def parse_options(self, options: dict) -> object:
        raise RuntimeError("this Triton 'cpu' backend only runs kernels in the interpreter; set TRITON_INTERPRET=1")

    def add_stages(self, stages: dict, options: object, language) -> None:
        raise RuntimeError("this Triton 'cpu' backend only runs kernels in the interpreter; set TRITON_INTERPRET=1")

    def load_dialects(self, context) -> None:
        return None

    def get_module_map(self) -> dict:
        return {}
