"""An override changes its key and nothing else, wherever the key sits and whatever its section's default.

Issue 59: `train sampling.temperature=0.7` also changed the response budget from 160 to 256 tokens,
and `distill task.max_start=9` brought back the default task's other keys, because a partial section
was built on its class's defaults instead of merged onto the section it sets. Every leaf of every
command's config (generated from the dataclasses, never listed by hand) is overridden here, as a
`key=value` text and as a YAML file, and every other leaf must keep its unoverridden value.
"""

from __future__ import annotations

import dataclasses
import re
import typing

import pytest
import yaml

from tandem.io.config_files import config_to_dict, load_config
from tandem.errors import TandemError
from tandem.io.strict import PRESET, _unwrap_optional
from tandem_app.commands.rollout import RolloutOverrides
from tandem_app.distill.config import DistillConfig
from tandem_app.experiments.demo import DemoConfig
from tandem_app.train.sft_config import SFTConfig
from tandem_app.train.train_config import TrainConfig

ROOTS = (TrainConfig, SFTConfig, DistillConfig, DemoConfig, RolloutOverrides)
# Keys a config holds equal by its own documented rule: a run has one seed (`TrainConfig._one_seed`), set
# through any of them (`tandem.seed` is `seed`'s legacy place, `tandem.io.legacy.TRAIN_MOVED`).
ONE_SEED = ("seed", "tandem.seed", "sampling.seed")


def tied(key: str) -> set[str]:
    """The keys that change with `key` by such a rule (`key` itself included)."""
    for prefix in ("", "train."):
        if key in {prefix + k for k in ONE_SEED}:
            return {prefix + k for k in ONE_SEED}
    return {key}


def leaves(cls, instance, prefix: str = "", keys=None):
    """(dotted key, declared type, default value) of every leaf of `instance`, sections walked (a preset's keys only)."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if not f.init or (keys is not None and f.name not in keys):
            continue
        value, tp = getattr(instance, f.name), _unwrap_optional(hints[f.name])[0]
        if dataclasses.is_dataclass(tp) and value is not None:
            inner = f.metadata[PRESET].keys if PRESET in f.metadata else None
            yield from leaves(tp, value, f"{prefix}{f.name}.", inner)
        else:
            yield f"{prefix}{f.name}", hints[f.name], value


def flat(tree: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in tree.items():
        out.update(flat(v, f"{prefix}{k}.") if isinstance(v, dict) else {f"{prefix}{k}": v})
    return out


def candidates(tp, value) -> list:
    """Values to try in place of `value`, most likely accepted first; the value itself last (always valid)."""
    tp, optional = _unwrap_optional(tp)
    if isinstance(value, bool) or tp is bool:
        out = [not value]
    elif isinstance(value, int) or tp is int:
        out = [value + 1, value + 2, value - 1] if value is not None else [1]
    elif isinstance(value, float) or tp is float:
        out = [value * 0.5, value + 0.1, 0.5] if value else [0.5, 0.1]
    elif isinstance(value, str) or tp is str:
        out = [(value or "") + "x", "x"]
    else:  # lists, tuples, unions, None
        out = [None] if optional and value is not None else []
    return [*out, value]


def text(value) -> str:
    """A value as a user types it after `key=`."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return yaml.safe_dump(list(value), default_flow_style=True).strip()
    return str(value)


def plain(value):
    """A value as `config_to_dict` writes it (a tuple as a list)."""
    return list(value) if isinstance(value, tuple) else value


def _cases():
    for cls in ROOTS:
        for key, tp, value in leaves(cls, cls()):
            yield pytest.param(cls, key, tp, value, id=f"{cls.__name__}:{key}")


def _first_accepted(cls, key, tp, value):
    """The first candidate `cls` accepts, and the config; a string refused lends the words of its error
    (`choose one of a, b`) as further candidates, so a key of named choices is tried with another choice."""
    tried, todo = [], candidates(tp, value)
    while todo:
        new = todo.pop(0)
        tried.append(new)
        try:
            cfg = load_config(cls, overrides=[f"{key}={text(new)}"])
            if flat(config_to_dict(cfg))[key] == plain(new):  # not an alias the config renames (`trl`)
                return new, cfg
        except TandemError as e:
            if isinstance(new, str) and new != value:
                words = re.findall(r"[A-Za-z_][\w.-]*", str(e))
                todo[:0] = [w for w in dict.fromkeys(words) if w not in tried and w != value and w not in todo]
    raise AssertionError(f"{key}={text(value)} (its own default) is refused")


@pytest.mark.parametrize("cls,key,tp,value", list(_cases()))
def test_overriding_one_leaf_leaves_every_other_leaf_as_it_was(cls, key, tp, value, tmp_path):
    before = flat(config_to_dict(cls()))
    new, by_text = _first_accepted(cls, key, tp, value)
    path = tmp_path / "c.yaml"
    tree: dict = {}
    node = tree
    *parents, last = key.split(".")
    for p in parents:
        node = node.setdefault(p, {})
    node[last] = plain(new)
    path.write_text(yaml.safe_dump(tree))
    by_file = load_config(cls, path)
    for cfg in (by_text, by_file):
        after = flat(config_to_dict(cfg))
        moved = {k for k in before if before[k] != after[k]} - tied(key)
        assert not moved, f"{key}={text(new)} also changed {sorted(moved)}"
        assert after[key] == plain(new)


def test_the_two_cases_of_the_issue():
    cfg = load_config(TrainConfig, overrides=["sampling.temperature=0.7"])
    assert (cfg.sampling.temperature, cfg.sampling.max_new_tokens) == (0.7, 160)
    distill = load_config(DistillConfig, overrides=["task.max_start=9"])
    assert distill.task == dataclasses.replace(DistillConfig().task, max_start=9)  # the demo's task, one key changed


def test_most_leaves_are_overridden_with_another_value_not_only_their_own():
    """The per-leaf test is not vacuous: a leaf falls back to its own value only where no other is accepted."""
    same = [key for cls in ROOTS for key, tp, value in leaves(cls, cls())
            if _first_accepted(cls, key, tp, value)[0] == value]
    total = sum(1 for cls in ROOTS for _ in leaves(cls, cls()))
    assert len(same) < total / 5, same


def test_a_file_and_overrides_merge_key_by_key(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("sampling:\n  temperature: 0.7\ntask:\n  max_start: 9\n")
    cfg = load_config(TrainConfig, path, ["sampling.top_p=0.9", "task.max_operand=4"])
    default = TrainConfig()
    assert cfg.sampling == dataclasses.replace(default.sampling, temperature=0.7, top_p=0.9)
    assert cfg.task == dataclasses.replace(default.task, max_start=9, max_operand=4)
