"""The trainers' registry (`tandem.trainers`): what each trainer runs, declared once, refused in one line.

Read as a specification: the three trainers and what each declares; `require` refusing a setting
a trainer lacks with one line naming the setting, the trainer and the fix; an unknown trainer
refused; and no trainer keeping a refusal of its own for these capabilities.
"""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest

from tandem.errors import TandemError
from tandem.rewards.partner_config import RLT_TEACHER_REWARD, PartnerRewardConfig
from tandem.trainers import (
    NAMES,
    REGISTRY,
    Capabilities,
    Trainer,
    capability_names,
    register_trainer,
    require,
    require_partner_reward,
    trainer,
)

REPO = Path(__file__).resolve().parents[1]
BOTH = ("likelihood", "transfer")
RULES = ("frozen", "sync", "ema")

# What each trainer runs today, in the registry's field order.
DECLARED = {
    "embedded": dict(partner_reward_kinds=BOTH, teacher_reward=True, junior_update_kinds=RULES, placements=("shared",),
                     following_junior_placements=("shared",), writer_sees_solution=True,
                     scores_with_following_junior=True, grpo_receiver_follows=False),
    "hf_trl": dict(partner_reward_kinds=BOTH, teacher_reward=False, junior_update_kinds=RULES, placements=("shared",),
                   following_junior_placements=("shared",), writer_sees_solution=True,
                   scores_with_following_junior=True, grpo_receiver_follows=False),
    "verl": dict(partner_reward_kinds=BOTH, teacher_reward=False, junior_update_kinds=RULES,
                 placements=("shared", "split"), following_junior_placements=("shared",), writer_sees_solution=True,
                 scores_with_following_junior=False, grpo_receiver_follows=False),
}


def test_the_three_trainers_are_registered():
    assert NAMES == ("embedded", "hf_trl", "verl")
    assert [REGISTRY[n].label for n in NAMES] == ["the embedded trainer", "HF TRL", "verl"]


@pytest.mark.parametrize("name", NAMES)
def test_each_trainer_declares_what_it_runs(name):
    assert REGISTRY[name].capabilities == Capabilities(**DECLARED[name])


def test_every_capability_has_a_refusal_and_no_default():
    for f in fields(Capabilities):
        assert f.metadata["refusal"] and "{" in f.metadata["refusal"], f.name
    with pytest.raises(TypeError):
        Capabilities()  # a new capability is a decision for every entry


def test_a_trainer_is_registered_once():
    with pytest.raises(ValueError, match="trainer 'verl' is registered twice"):
        register_trainer(REGISTRY["verl"])


def test_an_unknown_trainer_is_refused_in_one_line_naming_the_valid_ones():
    with pytest.raises(TandemError, match=r"^unknown trainer 'trlx'; choose one of embedded, hf_trl, verl$"):
        trainer("trlx")
    with pytest.raises(TandemError, match="unknown trainer 'trlx'"):
        require("trlx", "placements", "shared")


def test_an_unknown_capability_is_a_programming_error_naming_the_known_ones():
    with pytest.raises(ValueError, match="unknown capability 'telepathy'; the registry knows partner_reward_kinds"):
        require("verl", "telepathy")


@pytest.mark.parametrize("name", NAMES)
def test_require_passes_what_a_trainer_declares(name):
    for capability in capability_names():
        declared = getattr(REGISTRY[name].capabilities, capability)
        for value in declared if isinstance(declared, tuple) else [True] if declared else []:
            assert require(name, capability, value) is REGISTRY[name]


# (trainer, capability, value, context, the whole one-line refusal): the setting, the trainer, the fix.
REFUSALS = [
    ("hf_trl", "teacher_reward", True, dict(verifier_weight=0.0, format_penalty=-1.0, student="s"),
     "partner_reward: verifier_weight=0.0, format_penalty=-1.0, student='s': HF TRL adds the partner score to the "
     "verifier's reward and scores with the junior or the base; set verifier_weight=1, format_penalty=0, student='' "
     "(RLT's teacher reward runs on the embedded trainer)"),
    ("verl", "following_junior_placements", "split", dict(rule="sync:2"),
     "tandem.junior_update=sync:2 with tandem.placement=split: the junior follows the senior inside each rollout "
     "worker, which holds both only with placement=shared; set tandem.placement=shared or tandem.junior_update=frozen"),
    ("verl", "scores_with_following_junior", True, dict(weight=0.1, rule="ema:0.5"),
     "partner_reward.weight=0.1: tandem.junior_update=ema:0.5: verl scores with its reference worker, which stays "
     "frozen; set tandem.junior_update=frozen"),
    ("verl", "grpo_receiver_follows", True, dict(rule="sync:1"),
     "partner_reward.kind=transfer with tandem.junior_update=sync:1: a GRPO run's receiver stays its frozen base "
     "(or tandem.junior_model); set tandem.junior_update=frozen"),
    ("embedded", "placements", "split", {},
     "tandem.placement=split: the embedded trainer cannot place the senior and the junior that way; use verl, or "
     "tandem.placement=shared"),
]


@pytest.mark.parametrize(("name", "capability", "value", "context", "line"), REFUSALS)
def test_require_refuses_what_a_trainer_lacks_in_one_line(name, capability, value, context, line):
    with pytest.raises(TandemError) as e:
        require(name, capability, value, **context)
    assert str(e.value) == line and "\n" not in line


def test_the_partner_reward_section_is_checked_against_the_trainer():
    rlt = PartnerRewardConfig(weight=1.0, target="solution", writer_sees_solution=True, **RLT_TEACHER_REWARD)
    assert require_partner_reward("embedded", rlt) is REGISTRY["embedded"]
    for name in ("hf_trl", "verl"):
        with pytest.raises(TandemError, match=rf"student='': {REGISTRY[name].label} adds the partner score"):
            require_partner_reward(name, rlt)
        require_partner_reward(name, PartnerRewardConfig(kind="transfer", weight=1.0))


def test_a_trainer_without_a_capability_names_those_that_have_it(monkeypatch):
    caps = REGISTRY["hf_trl"].capabilities
    bare = Capabilities(**{**{f.name: getattr(caps, f.name) for f in fields(Capabilities)},
                           "partner_reward_kinds": ("likelihood",), "writer_sees_solution": False})
    monkeypatch.setitem(REGISTRY, "toy", Trainer("toy", "the toy trainer", "the toy trainer", bare))
    with pytest.raises(TandemError, match=r"^partner_reward.kind=transfer \(RLTR's transfer reward\) runs on the "
                                          r"embedded trainer, HF TRL over the reference engine and verl; the toy "
                                          r"trainer cannot continue the receiver from the prefix"):
        require("toy", "partner_reward_kinds", "transfer")
    with pytest.raises(TandemError, match=r"^partner_reward.writer_sees_solution=true: the toy trainer cannot show "
                                          r"the writer the solution; use the embedded trainer, HF TRL over the "
                                          r"reference engine and verl, or writer_sees_solution=false$"):
        require("toy", "writer_sees_solution")


# The words of each refusal the registry owns: none may be left in a trainer, the core or an application.
OWNED = ("cannot continue the receiver from the prefix", "adds the partner score to the verifier's reward",
         "which holds both only with placement=shared", "scores with its reference worker, which stays frozen",
         "receiver stays its frozen base")
RETIRED = ("require_verifier_reward", "runs_transfer")  # the partner section's old check and its flag


def _literals(path: Path) -> list[str]:
    """Every string a module writes, implicit concatenation joined (an f-string's fields as {})."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.JoinedStr):
            out.append("".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
    return out


def test_no_refusal_for_these_capabilities_remains_outside_the_registry():
    home = REPO / "tandem" / "trainers.py"
    sources = [p for folder in ("tandem", "tandem_app", "hf_grpo", "verl", "tandem_backends", "tandem_eval", "scripts")
               for p in (REPO / folder).rglob("*.py") if p != home]
    assert len(sources) > 50
    left = [f"{p.relative_to(REPO)}: {words}" for p in sources for text in ["\n".join(_literals(p))]
            for words in OWNED if words in text]
    left += [f"{p.relative_to(REPO)}: {name}" for p in sources for name in RETIRED
             if name in p.read_text(encoding="utf-8")]
    assert left == []
    refusals = " ".join(f.metadata["refusal"] for f in fields(Capabilities))
    assert all(words in refusals for words in OWNED)
