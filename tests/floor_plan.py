"""The floor plan drawn in model_spec/ARCHITECTURE.md, read from the drawing itself.

The tests' one source of the layers: `test_architecture.py` checks every import against it,
`test_docs_refs.py` takes the project's packages from it. The drawing is the fenced block
under the heading `## The floor plan`, one floor per line, top floor first:

    evaluation       tandem_eval/
    vLLM backend     vllm_source/  [vllm]

A floor is its name, two or more spaces, then its folders (`dir/`, relative to the
repository root) and, in brackets, the third-party packages first allowed on it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DRAWING = REPO / "model_spec" / "ARCHITECTURE.md"
HEADING = "## The floor plan"


@dataclass(frozen=True)
class Floor:
    name: str
    level: int  # 0 = the bottom floor
    folders: tuple[str, ...]
    externals: tuple[str, ...]


def floors(text: str | None = None) -> list[Floor]:
    """The floors of the drawing, bottom first."""
    text = DRAWING.read_text(encoding="utf-8") if text is None else text
    after = text.split(HEADING, 1)[1]
    block = after.split("```", 2)[1].split("\n", 1)[1]
    lines = [line for line in block.splitlines() if line.strip()]
    out = []
    for level, line in enumerate(reversed(lines)):
        name, rest = re.split(r"\s{2,}", line.strip(), maxsplit=1)
        externals = tuple(x.strip() for group in re.findall(r"\[([^\]]*)\]", rest) for x in group.split(","))
        folders = tuple(t.rstrip("/") for t in re.sub(r"\[[^\]]*\]", " ", rest).split() if t.endswith("/"))
        out.append(Floor(name, level, folders, externals))
    return out


def folder_of(path: Path, plan: list[Floor]) -> tuple[str, Floor] | None:
    """The deepest folder of the plan holding `path` (relative to the repository root), and its floor."""
    best = None
    for floor in plan:
        for folder in floor.folders:
            if path.parts[: len(Path(folder).parts)] == Path(folder).parts:
                if best is None or len(Path(folder).parts) > len(Path(best[0]).parts):
                    best = (folder, floor)
    return best


def packages(plan: list[Floor], root: Path = REPO) -> dict[str, str]:
    """Importable package name -> its folder: each folder of the plan that holds an `__init__.py` and is not
    a room of another package (`tandem_eval/core/` is `tandem_eval.core`, no package of its own)."""
    folders = [f for floor in plan for f in floor.folders if (root / f / "__init__.py").is_file()]
    return {Path(f).name: f for f in folders if not any(g != f and Path(f).is_relative_to(g) for g in folders)}
