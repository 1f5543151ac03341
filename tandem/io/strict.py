"""Strict dataclass configs: every key known, every value of its declared type.

`build(cls, data)` turns a nested dict (a YAML file, `key=value` overrides, verl's
`tandem:` block, a JSON environment variable) into dataclass `cls`, recursing into
dataclass-typed fields. It refuses, in one line and before any work:

- an unknown key, at any depth, naming the nearest valid one as the user types it, in
  full (`unknown config key 'prob_senor': did you mean tandem.prob_senior?`);
- a value that is not of the field's declared type (`steps must be an integer, got 'many'`);
  an `int` field takes no float, a `str` field no number, a `bool` field only true/false.

A `key=value` override arrives as `Raw(text)` and is parsed by the declared type of the
field it sets, never guessed from its spelling: `tandem.junior_model=1e3` is the string
'1e3', `steps=3` the int 3, `loss.clip_ratio_low=null` None.

A dataclass may declare, as class attributes:
- `ALIASES = {"legacy_key": "field"}`: legacy spellings accepted for a field;
- `MOVED = {"old.dotted.key": "new.dotted.key"}`: settings that changed section;
- `RETIRED = {"key": "why, and what to set instead"}`: keys refused with that hint.

A mapping given for a section is merged onto the section it sets, key by key, at any depth: a
key left out keeps the value it had before (the field's default, which may differ from its
class's defaults: `sampling.temperature=0.7` leaves the trainer's 160-token budget alone). No
section is ever replaced whole by a partial one.

A dataclass-typed field may be a section limited to some keys (`preset_section`): the
evaluation's sampling is a `SamplingConfig` whose keys are the five an evaluation records.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass

from tandem.errors import TandemError


@dataclass(frozen=True)
class Raw:
    """The text of a `key=value` override, typed later by the field it sets."""

    text: str


@dataclass(frozen=True)
class Preset:
    """A section limited to `keys` (field metadata under `PRESET`). Another field of the class is read
    only at the value it already has, so that the `asdict` of a whole instance builds the section; set
    to anything else it is unknown.
    """

    keys: tuple[str, ...]

    def build(self, tp, data, where: str, under):
        """The section `tp` from `data`, a (possibly partial) mapping of its keys, merged onto `under`."""
        if isinstance(data, tp) or not isinstance(data, dict):
            return coerce(data, tp, where)
        hints = typing.get_type_hints(tp)
        for key, value in data.items():
            known = key in self.keys or (key in hints and coerce(value, hints[key], f"{where}.{key}") == getattr(under, key))
            if not known:
                raise unknown_key(str(key), self.keys, where)
        return build(tp, data, where, under)


PRESET = "tandem.io.strict.preset"  # the field metadata key of a `Preset`


def preset_section(default: Callable[[], object], keys: tuple[str, ...]):
    """A dataclass field holding a section of `keys` only (see `Preset`), `default()` by default."""
    return dataclasses.field(default_factory=default, metadata={PRESET: Preset(tuple(keys))})


def valid_keys(cls) -> list[str]:
    """The keys `build(cls, ...)` accepts at the top level: fields, then legacy aliases."""
    return [f.name for f in dataclasses.fields(cls) if f.init] + list(getattr(cls, "ALIASES", {}))


def section_keys(cls, prefix: str = "") -> list[str]:
    """The dotted keys inside `cls`'s sections, at any depth (`tandem.prob_senior`), for suggestions."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        tp = _unwrap_optional(hints[f.name])[0]
        if f.init and PRESET in f.metadata:
            out += [f"{prefix}{f.name}.{k}" for k in f.metadata[PRESET].keys]
        elif f.init and dataclasses.is_dataclass(tp):
            inner = f"{prefix}{f.name}."
            out += [inner + k for k in valid_keys(tp)] + section_keys(tp, inner)
    return out


def unknown_key(key: str, valid, where: str = "", retired: dict | None = None, deeper=()) -> TandemError:
    """The one-line error for an unknown key, with the nearest valid one as the user types it.

    `valid` are the keys at this level; `deeper` the dotted keys of its sections, matched by
    their last part too (`prob_senor` at the top finds `tandem.prob_senior`). The suggestion
    is the full dotted key from the root the user writes (`where`, less a leading `$VAR`).
    """
    full = f"{where}.{key}" if where else key
    if retired and key in retired:
        return TandemError(f"config key {full!r} {retired[key]}")
    valid = list(valid)
    near = nearest_key(key, valid, deeper)
    root = ".".join(part for i, part in enumerate(where.split(".")) if part and not (i == 0 and part[0] == "$"))
    hint = f"did you mean {root + '.' if root else ''}{near}?" if near else f"valid keys: {', '.join(valid)}"
    return TandemError(f"unknown config key {full!r}: {hint}")


def nearest_key(key: str, valid, deeper=()) -> str | None:
    """The closest of `valid` and `deeper` (by whole key or last part), difflib's ratio >= 0.6; ties go to `valid`."""

    def score(candidate: str) -> float:
        names = {candidate, candidate.rsplit(".", 1)[-1]}
        return max(difflib.SequenceMatcher(None, key, name).ratio() for name in names)

    ranked = sorted(((score(c), -rank, c) for rank, c in enumerate([*valid, *deeper])), reverse=True)
    return ranked[0][2] if ranked and ranked[0][0] >= 0.6 else None


def rename_aliases(cls, data: dict, where: str = "") -> dict:
    """`data` with the legacy keys of `cls.ALIASES` renamed; both spellings set differently is an error."""
    data = dict(data)
    prefix = f"{where}." if where else ""
    for old, new in getattr(cls, "ALIASES", {}).items():
        if old in data:
            if new in data and data[new] != data[old]:
                raise TandemError(
                    f"both {prefix}{old} (legacy) and {prefix}{new} are set with different values; keep {prefix}{new}"
                )
            data[new] = data.pop(old)
    return data


def apply_moves(cls, data: dict) -> dict:
    """`data` with every `cls.MOVED` old dotted key moved to its new place (deep-copied path)."""
    moves = getattr(cls, "MOVED", {})
    if not moves:
        return data
    data = _copy_tree(data)
    for old, new in moves.items():
        *old_parents, old_key = old.split(".")
        parent = _walk(data, old_parents)
        if not isinstance(parent, dict) or old_key not in parent:
            continue
        value = parent.pop(old_key)
        *new_parents, new_key = new.split(".")
        target = data
        for p in new_parents:
            target = target.setdefault(p, {})
        if new_key in target and not _same(target[new_key], value):
            raise TandemError(f"both {old} (moved) and {new} are set with different values; keep {new}")
        target[new_key] = value
    return data


def build(cls, data, where: str = "", base=None):
    """Instantiate dataclass `cls` from a (possibly partial) nested dict, strictly.

    A key left out takes `base`'s value (an instance of `cls`: the section before this mapping is
    merged onto it), else the field's default. A section given as a mapping is built the same way
    over the value it sets, so every key is merged on its own, at any depth (the module docstring).
    """
    if data is None:
        data = {}
    if isinstance(data, Raw):
        raise TandemError(f"{where} is a section; set its keys ({where}.KEY=VALUE)")
    if not isinstance(data, dict):
        raise TandemError(f"{where or cls.__name__} is a section; give a mapping of its keys, got {data!r}")
    data = rename_aliases(cls, apply_moves(cls, data), where)
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    for key in data:
        if key not in fields:
            raise unknown_key(str(key), valid_keys(cls), where, getattr(cls, "RETIRED", None), section_keys(cls))
    kwargs = {} if base is None else {name: getattr(base, name) for name in fields}
    for k, v in data.items():
        inner = f"{where}.{k}" if where else k
        under = None
        if isinstance(v, dict):  # a section's keys: merged onto the section they set
            under = getattr(base, k) if base is not None else _default(fields[k])
        preset = fields[k].metadata.get(PRESET)
        kwargs[k] = preset.build(hints[k], v, inner, under) if preset else _merged(v, hints[k], inner, under)
    return cls(**kwargs)


def _default(f: dataclasses.Field):
    """A field's default value (a fresh one from its factory), None when it has none."""
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return None if f.default is dataclasses.MISSING else f.default


def _merged(value, tp, where: str, under):
    """`value` as `tp`; a mapping given for a section is merged key by key onto `under`, the section it sets."""
    section = _unwrap_optional(tp)[0]
    if isinstance(value, dict) and dataclasses.is_dataclass(section) and isinstance(under, section):
        return build(section, value, where, under)
    return coerce(value, tp, where)


def coerce(value, tp, where: str):
    """`value` as declared type `tp`, or a one-line `TandemError` naming `where`."""
    tp, optional = _unwrap_optional(tp)
    if isinstance(value, Raw):
        value = _parse_raw(value.text, tp, optional, where)
    if value is None:
        if optional:
            return None
        raise TandemError(f"{where} cannot be null")
    if dataclasses.is_dataclass(tp):
        return value if isinstance(value, tp) else build(tp, value, where)
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise TandemError(f"{where} must be true or false, got {value!r}")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise TandemError(f"{where} must be an integer, got {value!r}")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        raise TandemError(f"{where} must be a number, got {value!r}")
    if tp is str:
        if isinstance(value, str):
            return value
        raise TandemError(f"{where} must be a string, got {value!r} (quote it in a YAML file)")
    origin = typing.get_origin(tp)
    if origin in (list, tuple):
        if not isinstance(value, (list, tuple)):
            raise TandemError(f"{where} must be a list, got {value!r}")
        args = typing.get_args(tp)
        item = args[0] if len(args) == 1 or (len(args) == 2 and args[1] is Ellipsis) else None
        if item is not None and item is not typing.Any:
            value = [coerce(v, item, f"{where}[{i}]") for i, v in enumerate(value)]
        return origin(value)
    if origin is dict:
        if not isinstance(value, dict):
            raise TandemError(f"{where} must be a mapping, got {value!r}")
        return dict(value)
    if origin in (typing.Union, types.UnionType):
        return _coerce_union(value, typing.get_args(tp), where)
    return value


def _coerce_union(value, options, where: str):
    for option in options:
        try:
            return coerce(value, option, where)
        except TandemError:
            continue
    names = " or ".join(_type_name(o) for o in options)
    raise TandemError(f"{where} must be {names}, got {value!r}")


def _parse_raw(text: str, tp, optional: bool, where: str):
    stripped = text.strip()
    if optional and stripped.lower() in ("null", "none", "~"):
        return None
    if tp is str:
        if len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "'\"":
            return stripped[1:-1]
        return text
    if tp is bool:
        if stripped.lower() in ("true", "false"):
            return stripped.lower() == "true"
        raise TandemError(f"{where} must be true or false, got {text!r}")
    if tp is int:
        try:
            return int(stripped)
        except ValueError:
            raise TandemError(f"{where} must be an integer, got {text!r}") from None
    if tp is float:
        try:
            return float(stripped)
        except ValueError:
            raise TandemError(f"{where} must be a number, got {text!r}") from None
    if dataclasses.is_dataclass(tp):
        raise TandemError(f"{where} is a section; set its keys ({where}.KEY=VALUE)")
    import yaml  # lists, mappings and unions: YAML's rules, then the declared type decides

    try:
        return yaml.safe_load(stripped)
    except yaml.YAMLError as e:
        raise TandemError(f"{where}={text!r} does not parse: {str(e).splitlines()[0]}") from None


def _unwrap_optional(tp):
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType) and type(None) in args:
        rest = tuple(a for a in args if a is not type(None))
        return (rest[0] if len(rest) == 1 else typing.Union[rest]), True
    return tp, False


def _type_name(tp) -> str:
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(
        tp, getattr(tp, "__name__", str(tp))
    )


def _walk(data, path):
    for p in path:
        if not isinstance(data, dict) or p not in data:
            return None
        data = data[p]
    return data


def _copy_tree(d):
    return {k: _copy_tree(v) for k, v in d.items()} if isinstance(d, dict) else d


def _same(a, b) -> bool:
    """Equal values, where an override's text and a file's number may spell the same one."""
    a, b = (v.text if isinstance(v, Raw) else v for v in (a, b))
    try:
        return float(a) == float(b)
    except (TypeError, ValueError):
        return str(a) == str(b)
