"""Typed dataclass configs from a YAML/JSON file and `key=value` overrides.

The dataclasses are the source of truth: they hold every default once and validate
themselves. OmegaConf (the library under verl's Hydra configs) does the file loading,
the merging and the parsing of overrides: `tandem.prob_senior=0.5`, `loss.clip_ratio=0.28`,
`task.max_steps=3`, values typed by YAML's rules (`true`, `3`, `1e-4`, `null`, `[1, 2]`).
`build_config` then maps the merged tree onto the dataclass, refusing unknown keys (with
the list of valid ones) and values of the wrong type.
"""

from __future__ import annotations

import dataclasses
import textwrap
import types
import typing
from pathlib import Path

from tandem.config import TandemConfig
from tandem.errors import TandemError


def _first_line(e: Exception) -> str:
    return (str(e).strip() or type(e).__name__).splitlines()[0]


def read_config_file(path: str | Path) -> dict:
    """A YAML (.yaml/.yml) or JSON file holding one mapping."""
    from omegaconf import DictConfig, OmegaConf

    path = Path(path)
    if not path.is_file():
        raise TandemError(f"config file {path} not found; pass an existing .yaml or .json file")
    try:
        loaded = OmegaConf.load(path)
    except Exception as e:  # YAML parser errors
        raise TandemError(f"config file {path} does not parse: {_first_line(e)}") from None
    if not isinstance(loaded, DictConfig):
        raise TandemError(f"config file {path} must hold a mapping of keys to values, got a list")
    return OmegaConf.to_container(loaded, resolve=True)


def merge_overrides(data: dict, overrides) -> dict:
    """`data` with `key=value` overrides (dotted keys) merged on top."""
    from omegaconf import OmegaConf

    overrides = list(overrides)
    for item in overrides:
        if "=" not in item or not item.split("=", 1)[0].strip():
            raise TandemError(f"override {item!r} is not key=value; write e.g. steps=100 or tandem.prob_senior=0.5")
    try:
        merged = OmegaConf.merge(OmegaConf.create(data), OmegaConf.from_dotlist(overrides))
    except Exception as e:
        raise TandemError(f"overrides {overrides}: {_first_line(e)}") from None
    return OmegaConf.to_container(merged, resolve=True)


def load_config(cls, path: str | Path | None = None, overrides=(), defaults: dict | None = None):
    """`defaults` (dict) <- file <- overrides, then `cls(**...)` with names and types checked."""
    data = _merge(defaults or {}, read_config_file(path)) if path else (defaults or {})
    return build_config(cls, merge_overrides(data, overrides))


def _merge(base: dict, top: dict) -> dict:
    from omegaconf import OmegaConf

    return OmegaConf.to_container(OmegaConf.merge(OmegaConf.create(base), OmegaConf.create(top)), resolve=True)


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
    if tp in (int, float) and isinstance(value, str):  # a number quoted in the file: "3e-5"
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
