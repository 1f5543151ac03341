"""Every dotted name and file path the docs and module docstrings cite exists.

Scanned: `model_spec/*.md`, `verl/README.md`, `vllm_source/README.md`, `tandem_eval/README.md`
and the top docstring of every module of the project's packages (the folders of the floor
plan, `tests/floor_plan.py`). A name is a backticked `tandem.x.y` / `tandem_eval.x` / ...
of one of those packages (import the longest module prefix, then getattr the rest; modules
that need an absent backend, vLLM or verl, are checked as files instead); a path is a
backticked `dir/.../file.ext` under one of the project's top-level directories (a `::test_name` or `:NAME` suffix is dropped). A
`tandem.KEY` that is a config key (of `tandem-rlvr train` or of verl's `tandem:` block)
counts as existing. Placeholders in capitals (`tandem_app/commands/NAME.py`) and the paths in
`ABSENT` (cited as files that must not exist) are skipped.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path

import pytest

from floor_plan import floors, packages

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_DIRS = packages(floors())  # name -> folder
PACKAGES = tuple(PACKAGE_DIRS)
TOP_DIRS = (*sorted({Path(f).parts[0] for f in PACKAGE_DIRS.values()}), "tests", "scripts", "verl", "configs",
            "model_spec", ".ci")
DOCS = [*sorted((ROOT / "model_spec").glob("*.md")), ROOT / "verl" / "README.md", ROOT / "vllm_source" / "README.md",
        ROOT / "tandem_eval" / "README.md"]
TICKED = re.compile(r"`([^`\n]+)`")
NAME = re.compile(r"^(?:%s)(?:\.[A-Za-z_][A-Za-z0-9_]*)+$" % "|".join(PACKAGES))
ABSENT = {"verl/__init__.py"}  # verl/README.md: such a file would shadow the installed verl
PATH = re.compile(r"^(?:%s)/[\w./-]*[\w-]$" % "|".join(re.escape(d) for d in TOP_DIRS))


def _sources() -> list[tuple[str, str]]:
    out = [(str(p.relative_to(ROOT)), p.read_text()) for p in DOCS if p.is_file()]
    for folder in PACKAGE_DIRS.values():
        for py in sorted((ROOT / folder).rglob("*.py")):
            doc = ast.get_docstring(ast.parse(py.read_text()))
            if doc:
                out.append((str(py.relative_to(ROOT)), doc))
    return out


def _refs(kind: re.Pattern) -> list[tuple[str, str]]:
    seen, out = set(), []
    for where, text in _sources():
        for tick in TICKED.findall(text):
            token = tick.strip().split("::")[0].split(" ")[0].rstrip(".,:;")
            token = re.sub(r"\(.*$", "", token)  # `fn(args)` cites fn
            if kind is PATH:
                token = token.split(":")[0]
            if re.search(r"\b[A-Z]{2,}\b", token) or token in ABSENT:
                continue
            if kind.match(token) and (where, token) not in seen:
                seen.add((where, token))
                out.append((where, token))
    return out


def _module_file(dotted: str) -> Path | None:
    top, *rest = dotted.split(".")
    base = ROOT / PACKAGE_DIRS.get(top, top) / Path(*rest)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        module_name = ".".join(parts[:i])
        if _module_file(module_name) is None:
            continue
        try:
            obj = importlib.import_module(module_name)
        except Exception as e:  # a backend this venv lacks (vLLM): check the names in the source instead
            if isinstance(e, ImportError) and e.name and e.name.split(".")[0] in PACKAGES:
                raise
            rest = parts[i:]
            source = _module_file(module_name).read_text()
            return not rest or re.search(rf"\b{re.escape(rest[0])}\b", source) is not None
        for attr in parts[i:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _is_config_key(dotted: str) -> bool:
    import dataclasses
    import typing

    from tandem.process.config import TandemConfig
    from tandem_verl.tandem_block import LOSS_BLOCK_KEYS
    from tandem.io.strict import valid_keys
    from tandem_app.train.train_config import TrainConfig

    parts = dotted.split(".")
    if len(parts) == 2 and parts[1] in {"enable", *LOSS_BLOCK_KEYS, *valid_keys(TandemConfig)}:
        return True  # verl's flat `tandem:` block
    if dotted in TrainConfig.MOVED:
        return True
    cls = TrainConfig
    for part in parts:
        if not dataclasses.is_dataclass(cls) or part not in valid_keys(cls):
            return False
        cls = typing.get_type_hints(cls).get(part)
    return True


def test_the_checks_can_fail():
    assert not _resolves("tandem.process.config.NoSuchThing") and not _resolves("tandem.no_such_module")
    assert not _is_config_key("tandem.prob_senoir") and not _is_config_key("loss.clip_ratoi")
    assert _is_config_key("loss.loss_denominator") and _resolves("tandem.process.coins.request_key")
    assert ("x", "tandem.process.coins.request_key") not in _refs(PATH)


@pytest.mark.parametrize("where, name", _refs(NAME))
def test_cited_dotted_name_exists(where, name):
    assert _resolves(name) or _is_config_key(name), f"{where} cites `{name}`, which does not exist"


@pytest.mark.parametrize("where, path", _refs(PATH))
def test_cited_path_exists(where, path):
    assert (ROOT / path).exists() or list(ROOT.glob(path)), f"{where} cites `{path}`, which does not exist"
