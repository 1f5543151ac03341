"""Typed dataclass configs from a YAML/JSON file and `key=value` overrides.

The dataclasses are the source of truth: they hold every default once and validate
themselves. OmegaConf (the library under verl's Hydra configs) loads the file; the
`key=value` overrides and a command's typed flags are merged on top as they are, and
`tandem.io.strict.build` maps the tree onto the dataclass: an unknown key at any depth is an
error naming the nearest valid one, and an override's text is parsed by the declared type
of the field it sets (`tandem.prob_senior=0.5` a float, `tandem.junior_model=1e3` the
string '1e3', `loss.clip_ratio_low=null` None, `task.operations=[add, sub]` a list).
"""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

from tandem.errors import TandemError
from tandem.io.jsonl import read_text
from tandem.io.strict import PRESET, Raw, build


def _first_line(e: Exception) -> str:
    return (str(e).strip() or type(e).__name__).splitlines()[0]


def read_config_file(path: str | Path) -> dict:
    """A YAML (.yaml/.yml) or JSON file holding one mapping; a parse error names file:line:column.

    The file is read as bytes and decoded as every input file is (`tandem.io.jsonl.read_text`), so
    a byte that is not UTF-8 is `FILE:LINE: not UTF-8 (byte 0xNN at column C)`, not a codec's message.
    """
    import io

    import yaml
    from omegaconf import OmegaConf

    path = Path(path)
    if not path.is_file():
        raise TandemError(f"config file {path} not found; pass an existing .yaml or .json file")
    text = read_text(path)
    try:
        top = yaml.compose(text, Loader=yaml.SafeLoader)  # the file's shape, before OmegaConf reads it
        if top is not None and not isinstance(top, yaml.MappingNode):
            what = "a list" if isinstance(top, yaml.SequenceNode) else f"the value {top.value!r}"
            raise TandemError(f"config file {path} must be a mapping of keys to values (key: value lines), got {what}")
        config = OmegaConf.load(io.StringIO(text))  # OmegaConf refuses duplicate keys
        return OmegaConf.to_container(config, resolve=True)
    except TandemError:
        raise
    except yaml.MarkedYAMLError as e:
        raise TandemError(_yaml_error(path, e)) from None
    except Exception as e:  # interpolation errors
        raise TandemError(f"config file {path} does not parse: {_first_line(e)}") from None


def _yaml_error(path: Path, e) -> str:
    """`FILE:LINE:COLUMN: what is wrong` for a YAML error, from where the parser stopped."""
    mark = e.problem_mark or e.context_mark
    where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else str(path)
    problem = (e.problem or e.context or "does not parse").strip()
    duplicate = problem.removeprefix("found duplicate key ")
    if duplicate != problem:
        return f"{where}: duplicate key {duplicate!r}; set it once"
    context = f" ({e.context})" if e.context and e.problem else ""
    return f"{where}: {problem}{context}"


def parse_overrides(overrides) -> dict:
    """`key=value` strings (dotted keys) as a nested dict of `Raw` texts, typed later by the dataclass."""
    tree: dict = {}
    for item in overrides:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key or any(not part for part in key.split(".")):
            raise TandemError(f"override {item!r} is not key=value; write e.g. steps=100 or tandem.prob_senior=0.5")
        set_dotted(tree, key, Raw(text))
    return tree


def set_dotted(tree: dict, key: str, value) -> None:
    """tree[a][b][c] = value for key 'a.b.c' (sections created as needed)."""
    *parents, last = key.split(".")
    node = tree
    for p in parents:
        child = node.get(p)
        if not isinstance(child, dict):
            if child is not None:
                raise TandemError(f"override {key}: {p} is a value, not a section")
            child = node[p] = {}
        node = child
    node[last] = value


def merge(base: dict, top: dict) -> dict:
    """`base` with `top` merged on top, section by section (neither is modified)."""
    out = dict(base)
    for k, v in top.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def load_config(cls, path: str | Path | None = None, overrides=(), defaults: dict | None = None, flags=None):
    """`defaults` <- file <- `key=value` overrides <- typed `flags` {dotted key: value}, then `cls`, strictly."""
    data = merge(defaults or {}, read_config_file(path)) if path else dict(defaults or {})
    data = merge(data, parse_overrides(overrides))
    typed: dict = {}
    for key, value in (flags or {}).items():
        set_dotted(typed, key, value)
    return build_config(cls, merge(data, typed))


def build_config(cls, data: dict, where: str = ""):
    """Instantiate dataclass `cls` from a (possibly partial) nested dict (`tandem.io.strict.build`)."""
    return build(cls, data, where)


def config_to_dict(cfg, keys: tuple[str, ...] | None = None) -> dict:
    """Plain nested dict of a config (of its `keys` only, if given); a preset section is written as its keys."""
    out = {}
    for f in dataclasses.fields(cfg):
        if keys is not None and f.name not in keys:
            continue
        v = getattr(cfg, f.name)
        inner = f.metadata[PRESET].keys if PRESET in f.metadata else None
        out[f.name] = config_to_dict(v, inner) if dataclasses.is_dataclass(v) else (list(v) if isinstance(v, tuple) else v)
    return out


def config_diff(a: dict, b: dict, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two nested dicts."""
    out = []
    for k in sorted(set(a) | set(b)):
        va, vb = a.get(k), b.get(k)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += config_diff(va, vb, f"{prefix}{k}.")
        elif va != vb:
            out.append(f"{prefix}{k}")
    return out


def describe_config(cls) -> str:
    """`key=default` for every field (nested sections dotted), for a command's --help."""

    def defaults(obj, prefix=""):
        for k, v in config_to_dict(obj).items():
            if isinstance(v, dict):
                yield from (f"{prefix}{k}.{kk}={vv}" for kk, vv in v.items())
            else:
                yield f"{prefix}{k}={v}"

    items = list(defaults(_default_instance(cls)))
    return "config keys (defaults):\n" + textwrap.fill(
        "  ".join(items), width=100, initial_indent="  ", subsequent_indent="  ", break_on_hyphens=False
    )


def _default_instance(cls):
    """An instance with every default, bypassing required-field checks in __post_init__."""
    obj = cls.__new__(cls)
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            setattr(obj, f.name, f.default)
        elif f.default_factory is not dataclasses.MISSING:
            setattr(obj, f.name, f.default_factory())
    return obj
