"""Typed dataclass configs: a YAML or JSON file, then `key=value` overrides, then validation.

Nested sections are dataclasses addressed with dots (`tandem.prob_senior=0.5`,
`loss.clip_ratio=0.28`, `task.max_steps=3`). Values in overrides are parsed as YAML
scalars (`true`, `3`, `1e-4`, `null`, `[1, 2]`) and checked against the field's type;
an unknown key is an error that lists the valid ones.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from pathlib import Path

from tandem.config import TandemConfig
from tandem.errors import TandemError


def read_config_file(path: str | Path) -> dict:
    """A YAML (.yaml/.yml) or JSON file holding one mapping."""
    path = Path(path)
    if not path.is_file():
        raise TandemError(f"config file {path} not found; pass an existing .yaml or .json file")
    text = path.read_text(encoding="utf-8")
    try:
        if path.suffix in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text)
        else:
            data = json.loads(text)
    except Exception as e:  # yaml.YAMLError or json.JSONDecodeError
        raise TandemError(f"config file {path} does not parse: {str(e).splitlines()[0]}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise TandemError(f"config file {path} must hold a mapping of keys to values, got {type(data).__name__}")
    return data


def parse_override(item: str) -> tuple[list[str], object]:
    """`a.b=value` -> (["a", "b"], parsed value)."""
    if "=" not in item:
        raise TandemError(f"override {item!r} is not key=value; write e.g. steps=100 or tandem.prob_senior=0.5")
    key, raw = item.split("=", 1)
    import yaml

    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key.strip().split("."), value


def apply_overrides(data: dict, overrides) -> dict:
    data = json.loads(json.dumps(data))  # deep copy of plain data
    for item in overrides:
        keys, value = parse_override(item)
        node = data
        for k in keys[:-1]:
            node = node.setdefault(k, {})
            if not isinstance(node, dict):
                raise TandemError(f"override {item!r}: {k!r} is not a section")
        node[keys[-1]] = value
    return data


def _unwrap_optional(tp):
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else tp), True
    return tp, False


def _coerce(value, tp, where: str):
    tp, optional = _unwrap_optional(tp)
    if value is None:
        if optional:
            return None
        raise TandemError(f"{where} cannot be null")
    if dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if not isinstance(value, dict):
            raise TandemError(f"{where} is a section; give a mapping of its keys")
        return build_config(tp, value, where)
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise TandemError(f"{where} must be true or false, got {value!r}")
    if tp is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if tp is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if tp in (int, float) and isinstance(value, str):  # YAML 1.1 reads `3e-5` as a string
        try:
            return tp(value)
        except ValueError:
            pass
    if tp is str and isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    origin = typing.get_origin(tp)
    if origin in (list, tuple) and isinstance(value, (list, tuple)):
        return origin(value)
    if origin is dict and isinstance(value, dict):
        return value
    if tp in (int, float, str):
        raise TandemError(f"{where} must be {tp.__name__}, got {value!r}")
    return value  # unions of several types: left to the dataclass's own validation


def build_config(cls, data: dict, where: str = ""):
    """Instantiate dataclass `cls` from a (possibly partial) nested dict."""
    if cls is TandemConfig:
        return TandemConfig.from_dict(data)
    hints = typing.get_type_hints(cls)
    names = [f.name for f in dataclasses.fields(cls) if f.init]
    unknown = sorted(set(data) - set(names))
    if unknown:
        prefix = f"{where}." if where else ""
        raise TandemError(
            f"unknown config key(s) {', '.join(prefix + k for k in unknown)}; valid keys: {', '.join(names)}"
        )
    kwargs = {k: _coerce(v, hints[k], f"{where}.{k}" if where else k) for k, v in data.items()}
    return cls(**kwargs)


def load_config(cls, path: str | Path | None = None, overrides=(), defaults: dict | None = None):
    """`defaults` (dict) <- file <- overrides, then `cls(**...)` with types checked."""
    data = _merge(defaults or {}, read_config_file(path) if path else {})
    return build_config(cls, apply_overrides(data, overrides))


def _merge(base: dict, top: dict) -> dict:
    out = dict(base)
    for k, v in top.items():
        out[k] = _merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def config_to_dict(cfg) -> dict:
    """Plain nested dict of a config (TandemConfig without its pass-through `extra`)."""
    if isinstance(cfg, TandemConfig):
        return cfg.to_dict()
    out = {}
    for f in dataclasses.fields(cfg):
        v = getattr(cfg, f.name)
        out[f.name] = config_to_dict(v) if dataclasses.is_dataclass(v) else (list(v) if isinstance(v, tuple) else v)
    return out


def config_diff(a: dict, b: dict, prefix: str = "") -> list[str]:
    """Dotted keys whose values differ between two nested dicts."""
    keys = sorted(set(a) | set(b))
    out = []
    for k in keys:
        va, vb = a.get(k), b.get(k)
        if isinstance(va, dict) and isinstance(vb, dict):
            out += config_diff(va, vb, f"{prefix}{k}.")
        elif va != vb:
            out.append(f"{prefix}{k}")
    return out


def describe_config(cls) -> str:
    """`key=default` for every field (nested sections dotted), for a command's --help."""
    import textwrap

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
