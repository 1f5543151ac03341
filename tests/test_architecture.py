"""One rule, read from the floor plan drawn in model_spec/ARCHITECTURE.md: a folder imports only
from the folders on the floors below it (and itself); a third-party package named on a floor
is first allowed there.

Every Python file of the tree lies in a folder of the plan. Every import counts, the lazy
ones inside functions and `importlib.import_module("...")` with a literal name too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from floor_plan import REPO, Floor, floors, folder_of, packages

PLAN = floors()
SKIPPED = ("tests",)  # the tests may import any floor


def _literal_prefix(node) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    return None


def imported_names(source: str) -> set[str]:
    """Every module name `source` imports, at any depth (absolute imports and import_module literals)."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module":
            if node.args and (name := _literal_prefix(node.args[0])):
                names.add(name)
    return names


def python_files(root: Path = REPO) -> list[Path]:
    return sorted(p.relative_to(root) for p in root.rglob("*.py")
                  if not any(part.startswith(".") or part.endswith(".egg-info") for part in p.relative_to(root).parts)
                  and p.relative_to(root).parts[0] not in SKIPPED)


def floor_of_import(name: str, plan: list[Floor], owners: dict[str, str]) -> tuple[str | None, Floor] | None:
    """(folder, floor) of an imported module of the project (the deepest folder of the plan holding it: a
    package's rooms are floors of their own), (None, floor) of a named third party, else None."""
    top, *rest = name.split(".")
    if top in owners:
        return folder_of(Path(owners[top], *[part for part in rest if part]), plan)
    return next(((None, f) for f in plan if top in f.externals), None)


def upward_imports(path: Path, source: str, plan: list[Floor], owners: dict[str, str]) -> list[str]:
    """Each import of `path` that does not run down the plan, as 'path (floor) imports name (floor)'."""
    folder, floor = folder_of(path, plan)
    out = []
    for name in sorted(imported_names(source)):
        target = floor_of_import(name, plan, owners)
        if target is None or target[0] == folder:
            continue
        below = target[1].level < floor.level if target[0] else target[1].level <= floor.level
        if not below:
            out.append(f"{path} ({floor.name}) imports {name} ({target[1].name})")
    return out


def test_every_python_file_lies_in_a_folder_of_the_plan():
    assert [str(p) for p in python_files() if folder_of(p, PLAN) is None] == []


def test_every_folder_of_the_plan_exists_and_lies_on_one_floor():
    folders = [f for floor in PLAN for f in floor.folders]
    assert len(folders) == len(set(folders)) and all((REPO / f).is_dir() for f in folders)


def test_no_import_runs_up_a_floor():
    owners = packages(PLAN)
    found = [line for p in python_files() if folder_of(p, PLAN)
             for line in upward_imports(p, (REPO / p).read_text(encoding="utf-8"), PLAN, owners)]
    assert found == []


TOY = floors("## The floor plan\n```\napps  app/\nbackend  back/  [vllm]\ncore  core/\n```\n")
TOY_OWNERS = {"app": "app", "back": "back", "core": "core"}


@pytest.mark.parametrize("path, source, expected", [
    ("core/x.py", "import app.main\n", ["core/x.py (core) imports app.main (apps)"]),
    ("core/x.py", "def f():\n    from back.engine import E\n", ["core/x.py (core) imports back.engine (backend)"]),
    ("core/x.py", "import importlib\nimportlib.import_module(f'app.{name}')\n", ["core/x.py (core) imports app. (apps)"]),
    ("core/x.py", "import vllm\n", ["core/x.py (core) imports vllm (backend)"]),
    ("back/x.py", "import vllm\nfrom core.process import advance\nimport core_extras\n", []),
    ("app/x.py", "from app.util import u\nimport back\nimport core\n", []),
])
def test_the_rule_sees_every_kind_of_import(path, source, expected):
    assert upward_imports(Path(path), source, TOY, TOY_OWNERS) == expected


def test_a_packages_rooms_are_floors_of_their_own():
    plan = floors("## The floor plan\n```\napps  pkg/\nupper  pkg/up/\nlower  pkg/low/\n```\n")
    owners = {"pkg": "pkg"}
    assert upward_imports(Path("pkg/low/x.py"), "from pkg.up import y\n", plan, owners) == [
        "pkg/low/x.py (lower) imports pkg.up (upper)"]
    assert upward_imports(Path("pkg/up/x.py"), "from pkg.low.z import y\nimport pkg.up.w\n", plan, owners) == []
    assert upward_imports(Path("pkg/low/x.py"), "from pkg import y\n", plan, owners) == [
        "pkg/low/x.py (lower) imports pkg (apps)"]


def test_a_folder_on_the_same_floor_is_not_below():
    plan = floors("## The floor plan\n```\nbackends  a/  b/\ncore  core/\n```\n")
    assert upward_imports(Path("a/x.py"), "import b\n", plan, {"a": "a", "b": "b"}) == ["a/x.py (backends) imports b (backends)"]
