"""The trainers' registry: what each trainer can run, declared once, asked with `require`.

Three trainers run the tandem process: the embedded trainer (`tandem_app/train/`), Hugging Face
TRL over the reference engine (`hf_grpo/`) and verl (`verl/tandem_verl/`). An entry names the
trainer, says how a refusal calls it, and declares what it can run (`Capabilities`): the partner
reward kinds, RLT's teacher reward, the junior update rules, the placements, where a junior that
follows the senior can live, whether the writer can see the solution, and whether the partner
score can be computed by a junior that follows the senior. Each trainer asks `require` at
config time, before any model loads; a setting its entry lacks is refused in one line naming the
setting, the trainer and the fix. The refusal's words live beside the capability, here only
(tests/test_trainer_registry.py checks that none is left in a trainer).

The backends' registry (`tandem_backends.registry`) is the same idea one floor up, for rollout
engines; this one stays in the core (torch-free) so that a config refuses before any import.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from tandem.errors import TandemError


def _capability(refusal: str):
    """A capability; `refusal` is its one-line error, formatted with `trainer` (the asker's label), `value`
    (the setting asked for), `having` (who has it: each entry's `runs_as`, joined) and the caller's context."""
    return field(metadata={"refusal": refusal})


@dataclass(frozen=True)
class Capabilities:
    """What a trainer can run; every entry sets every field (no defaults: a new one is a decision).

    A tuple field holds the values a trainer runs (`require` asks whether one is among them); a bool
    field says whether it runs the feature at all (`require` asks for it to be True).
    """

    partner_reward_kinds: tuple[str, ...] = _capability(
        "partner_reward.kind={value} (RLTR's transfer reward) runs on {having}; {trainer} cannot continue the "
        "receiver from the prefix: use one of those, or partner_reward.kind=likelihood")
    teacher_reward: bool = _capability(  # RLT's teacher reward: verifier_weight, format_penalty, a student apart
        "partner_reward: verifier_weight={verifier_weight}, format_penalty={format_penalty}, student={student!r}: "
        "{trainer} adds the partner score to the verifier's reward and scores with the junior or the base; set "
        "verifier_weight=1, format_penalty=0, student='' (RLT's teacher reward runs on {having})")
    junior_update_kinds: tuple[str, ...] = _capability(
        "tandem.junior_update={value}: {trainer} cannot make the junior follow that way; use {having}, or "
        "tandem.junior_update=frozen")
    placements: tuple[str, ...] = _capability(
        "tandem.placement={value}: {trainer} cannot place the senior and the junior that way; use {having}, or "
        "tandem.placement=shared")
    following_junior_placements: tuple[str, ...] = _capability(
        "tandem.junior_update={rule} with tandem.placement={value}: the junior follows the senior inside each "
        "rollout worker, which holds both only with placement=shared; set tandem.placement=shared or "
        "tandem.junior_update=frozen")
    writer_sees_solution: bool = _capability(
        "partner_reward.writer_sees_solution=true: {trainer} cannot show the writer the solution; use {having}, or "
        "writer_sees_solution=false")
    scores_with_following_junior: bool = _capability(
        "partner_reward.weight={weight}: tandem.junior_update={rule}: {trainer} scores with its reference worker, "
        "which stays frozen; set tandem.junior_update=frozen")
    grpo_receiver_follows: bool = _capability(
        "partner_reward.kind=transfer with tandem.junior_update={rule}: a GRPO run's receiver stays its frozen base "
        "(or tandem.junior_model); set tandem.junior_update=frozen")


def capability_names() -> tuple[str, ...]:
    return tuple(f.name for f in fields(Capabilities))


@dataclass(frozen=True)
class Trainer:
    """One registry entry: the trainer's name, how a refusal names it, how a list of those having a capability
    names it, and what it can run."""

    name: str
    label: str  # the trainer in a refusal ('HF TRL adds ...')
    runs_as: str  # the trainer in a list of those that run a capability ('runs on verl')
    capabilities: Capabilities


REGISTRY: dict[str, Trainer] = {}


def register_trainer(entry: Trainer) -> Trainer:
    if entry.name in REGISTRY:
        raise ValueError(f"trainer {entry.name!r} is registered twice")
    REGISTRY[entry.name] = entry
    return entry


RULES = ("frozen", "sync", "ema")  # tandem.junior_update's kinds (tandem.process.junior_update.parse_junior_update)
KINDS = ("likelihood", "transfer")  # partner_reward.kind (tandem.rewards.partner_config.KINDS)

for _entry in (
    # The reference engine runs one placement; the junior follows as a deep copy the trainer updates.
    Trainer("embedded", "the embedded trainer", "the embedded trainer",
            Capabilities(partner_reward_kinds=KINDS, teacher_reward=True, junior_update_kinds=RULES,
                         placements=("shared",), following_junior_placements=("shared",), writer_sees_solution=True,
                         scores_with_following_junior=True, grpo_receiver_follows=False)),
    # TRL's rollout_func over the reference engine; RLT's teacher reward is not computed there.
    Trainer("hf_trl", "HF TRL", "HF TRL over the reference engine",
            Capabilities(partner_reward_kinds=KINDS, teacher_reward=False, junior_update_kinds=RULES,
                         placements=("shared",), following_junior_placements=("shared",), writer_sees_solution=True,
                         scores_with_following_junior=True, grpo_receiver_follows=False)),
    # verl: the vLLM rollout server (both placements), the partner score from its frozen reference worker.
    Trainer("verl", "verl", "verl",
            Capabilities(partner_reward_kinds=KINDS, teacher_reward=False, junior_update_kinds=RULES,
                         placements=("shared", "split"), following_junior_placements=("shared",),
                         writer_sees_solution=True, scores_with_following_junior=False, grpo_receiver_follows=False)),
):
    register_trainer(_entry)

NAMES = tuple(REGISTRY)


def trainer(name: str) -> Trainer:
    """The entry of `name`; an unknown name fails in one line naming the valid ones."""
    if name not in REGISTRY:
        raise TandemError(f"unknown trainer {name!r}; choose one of {', '.join(REGISTRY)}")
    return REGISTRY[name]


def has(entry: Trainer, capability: str, value=True) -> bool:
    """Whether `entry` runs `capability` (a bool field) or runs it with `value` (a tuple field)."""
    declared = getattr(entry.capabilities, capability)
    return value in declared if isinstance(declared, tuple) else declared is bool(value)


def _joined(names: list[str]) -> str:
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}" if names else "no trainer"


def require(name: str, capability: str, value=True, **context) -> Trainer:
    """The entry of `name` if it runs `capability` (with `value`); else the capability's one-line refusal,
    naming the setting (`value` and `context`, the other settings its words name), the trainer and the fix."""
    if capability not in capability_names():
        raise ValueError(f"unknown capability {capability!r}; the registry knows {', '.join(capability_names())}")
    entry = trainer(name)
    if not has(entry, capability, value):
        refusal = Capabilities.__dataclass_fields__[capability].metadata["refusal"]
        having = _joined([e.runs_as for e in REGISTRY.values() if has(e, capability, value)])
        raise TandemError(refusal.format(trainer=entry.label, value=value, having=having, **context))
    return entry


def require_partner_reward(name: str, partner) -> Trainer:
    """A `partner_reward` section (`tandem.rewards.partner_config.PartnerRewardConfig`) checked against trainer `name`:
    its kind, RLT's teacher reward keys, and whether the writer sees the solution."""
    require(name, "partner_reward_kinds", partner.kind)
    if partner.verifier_weight != 1.0 or partner.format_penalty or partner.student:
        require(name, "teacher_reward", verifier_weight=partner.verifier_weight,
                format_penalty=partner.format_penalty, student=partner.student)
    if partner.writer_sees_solution:
        require(name, "writer_sees_solution")
    return trainer(name)
