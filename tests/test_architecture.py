"""The layers of model_spec/ARCHITECTURE.md, checked on the source: who may import whom.

- core (`tandem/*.py`, `tandem/grading/`) imports no backend and no application;
- backends (`vllm_source/`, the verl adapter `tandem/integrations/`) import the core and
  each other, never an application;
- applications (`tandem/train/`, `tandem/commands/`, `tandem_eval/`) sit on top.

Every import counts, the lazy ones inside functions and `importlib.import_module("...")`
with a literal name too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
APPLICATIONS = ("tandem.train", "tandem.commands", "tandem_eval")
BACKENDS = ("vllm_source", "tandem.integrations", "vllm", "verl", "ray")


def core_modules() -> list[Path]:
    return sorted((REPO / "tandem").glob("*.py")) + sorted((REPO / "tandem" / "grading").glob("*.py"))


def backend_modules() -> list[Path]:
    return sorted((REPO / "vllm_source").glob("*.py")) + sorted((REPO / "tandem" / "integrations").glob("*.py"))


def _literal_prefix(node) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    return None


def imported_names(path: Path) -> set[str]:
    """Every module name `path` imports, at any depth (absolute imports and import_module literals)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            if node.args and (name := _literal_prefix(node.args[0])):
                names.add(name)
    return names


def offending(paths: list[Path], forbidden: tuple[str, ...]) -> list[str]:
    return [f"{p.relative_to(REPO)} imports {name}" for p in paths for name in sorted(imported_names(p))
            if any(name == f or name.startswith(f + ".") for f in forbidden)]


def test_the_core_imports_no_backend_and_no_application():
    assert offending(core_modules(), APPLICATIONS + BACKENDS) == []


def test_backends_import_no_application():
    assert offending(backend_modules(), APPLICATIONS) == []


@pytest.mark.parametrize("source, forbidden, expected", [
    ("import tandem_eval.grader\n", APPLICATIONS, ["x.py imports tandem_eval.grader"]),
    ("def f():\n    from tandem.train.sft import run_sft\n", APPLICATIONS, ["x.py imports tandem.train.sft"]),
    ("import importlib\nimportlib.import_module(f'tandem.commands.{name}')\n", APPLICATIONS,
     ["x.py imports tandem.commands."]),
    ("from tandem.process import advance\nimport tandem_evaluation\n", APPLICATIONS, []),
])
def test_the_layer_check_sees_every_kind_of_import(tmp_path, monkeypatch, source, forbidden, expected):
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    (tmp_path / "x.py").write_text(source)
    assert offending([tmp_path / "x.py"], forbidden) == expected
