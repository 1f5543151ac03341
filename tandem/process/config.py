"""`TandemConfig`: every knob of the tandem process, validated on construction.

One config object is shared by every backend (reference engine, vLLM, verl, eval). It
accepts the legacy key names of the paper's released code as aliases, and the legacy
`VLLM_TANDEM_CONFIG` environment variable (a JSON object). Parsing is strict
(`tandem.io.strict`): an unknown key is an error naming the nearest valid one.

Loss settings are not the process's: `junior_token_loss_weight` (its legacy
spelling in `tandem.io.legacy.LOSS_KEYS`) lives in the loss config (`tandem.loss.loss_config.TandemLossConfig`).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import ClassVar

from tandem.io import legacy

from tandem.process import strategies
from tandem.errors import TandemError
from tandem.process.junior_update import JuniorUpdate, parse_junior_update
from tandem.io.strict import build

STRATEGIES = strategies.NAMES  # every registered selection strategy (tandem/process/strategies.py)
# Decoding modes of the reference engine (tandem/reference/engine.py); all give the same tokens.
ENGINE_MODES = ("auto", "paired", "lockstep", "lazy")
AUTHORS = ("senior", "junior")
# Where a vLLM engine puts the two models: both on every device ("shared"), or the senior
# on tensor-parallel rank 0 and the junior on rank 1 of a 2-worker engine ("split").
PLACEMENTS = ("shared", "split")

ENV_VAR = "VLLM_TANDEM_CONFIG"


@dataclass
class TandemConfig:
    """How authorship is decided while a senior and a junior co-write a response.

    See model_spec/SPEC.md for the state machine each field drives.
    """

    selection_strategy: str = "word"  # word | bernoulli | sentence | alternating | chunk | step
    prob_senior: float = 0.5  # P(next author = senior) at each coin redraw
    max_gap_tokens: int = 32  # `word`: redraw at the latest after this many tokens
    chunk_size: int = 16  # `chunk`: toggle every this many tokens
    first_author: str = "senior"  # deterministic strategies start with this author
    boundary_token_ids: list[int] | str | None = None  # explicit id list or JSON file; None = derive
    seed: int = 0  # keys the replayable coins (not token sampling)
    junior_model: str | None = None  # path or hub name of the frozen junior (backends load it)
    junior_update: str = "frozen"  # frozen | sync:K | ema:BETA, per optimizer step (tandem/process/junior_update.py)
    placement: str = "shared"  # vLLM: shared | split (see vllm_source/README.md)
    # Backend keys, declared by name. vLLM (vllm_source/model.py): the senior's causal-LM class
    # when its HF config names none (e.g. 'Qwen3ForCausalLM').
    senior_architecture: str | None = None

    ALIASES: ClassVar[dict[str, str]] = legacy.PROCESS_KEYS
    RETIRED: ClassVar[dict[str, str]] = legacy.PROCESS_RETIRED

    def __post_init__(self) -> None:
        if self.selection_strategy not in STRATEGIES:
            raise TandemError(
                f"unknown selection_strategy {self.selection_strategy!r}; choose one of {', '.join(STRATEGIES)}"
            )
        if not isinstance(self.prob_senior, (int, float)) or not 0.0 <= float(self.prob_senior) <= 1.0:
            raise TandemError(f"prob_senior must be a probability in [0, 1], got {self.prob_senior!r}")
        self.prob_senior = float(self.prob_senior)
        if not isinstance(self.max_gap_tokens, int) or self.max_gap_tokens < 1:
            raise TandemError(f"max_gap_tokens must be an integer >= 1, got {self.max_gap_tokens!r}")
        if not isinstance(self.chunk_size, int) or self.chunk_size < 1:
            raise TandemError(f"chunk_size must be an integer >= 1, got {self.chunk_size!r}")
        self.first_author = legacy.AUTHOR_NAMES.get(self.first_author, self.first_author)
        if self.first_author not in AUTHORS:
            raise TandemError(f"first_author must be 'senior' or 'junior', got {self.first_author!r}")
        # parsed once, here: every backend takes the parsed rule (`junior_update_rule`); the key keeps its text
        self._junior_update_rule = parse_junior_update(self.junior_update)
        self.junior_update = self._junior_update_rule.text
        if self.placement not in PLACEMENTS:
            raise TandemError(f"placement must be 'shared' or 'split', got {self.placement!r}")
        if not isinstance(self.seed, int):
            raise TandemError(f"seed must be an integer, got {self.seed!r}")
        if isinstance(self.boundary_token_ids, (list, tuple)):
            if not all(isinstance(i, int) and i >= 0 for i in self.boundary_token_ids):
                raise TandemError("boundary_token_ids must be a list of non-negative token ids")
            self.boundary_token_ids = sorted(set(self.boundary_token_ids))

    @property
    def junior_update_rule(self) -> JuniorUpdate:
        """`junior_update` as parsed on construction (a plain attribute, so `to_dict` and config.json keep the text)."""
        return self._junior_update_rule

    @property
    def uses_coins(self) -> bool:
        return strategies.strategy(self.selection_strategy).draws_coins

    @property
    def needs_boundaries(self) -> bool:
        return strategies.strategy(self.selection_strategy).boundary_kind is not None

    def explicit_boundary_ids(self) -> list[int] | None:
        """The user's boundary ids (inline list or JSON file), or None to derive them."""
        ids = self.boundary_token_ids
        if ids is None or isinstance(ids, list):
            return ids
        path = Path(ids)
        if not path.is_file():
            raise TandemError(f"boundary_token_ids file {path} not found; pass a JSON list of ids or omit it")
        try:
            loaded = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise TandemError(f"boundary_token_ids file {path} is not valid JSON ({e.msg})") from None
        if isinstance(loaded, dict):  # accept {"ids": [...]} as written by `tandem-rlvr boundaries --out`
            loaded = loaded.get("ids")
        if not isinstance(loaded, list) or not all(isinstance(i, int) for i in loaded):
            raise TandemError(f"boundary_token_ids file {path} must hold a JSON list of integer ids")
        return sorted(set(loaded))

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict | None, where: str = "") -> "TandemConfig":
        """Build from a plain dict, strictly (`tandem.io.strict.build`); legacy keys are renamed."""
        return build(cls, legacy.placement(d or {}), where)

    @classmethod
    def from_env(cls, var: str = ENV_VAR) -> "TandemConfig | None":
        """Read the legacy `VLLM_TANDEM_CONFIG` JSON object; None when the variable is unset.

        The released code's object also carries the trainer's loss keys (`LOSS_KEYS`); a
        rollout process does not train, so they are dropped here, by name. Its switch
        `enabled` is accepted: false means no tandem config (None).
        """
        raw = os.environ.get(var)
        if not raw:
            return None
        try:
            d = json.loads(raw)
        except json.JSONDecodeError as e:
            raise TandemError(f"${var} is not valid JSON ({e.msg}); set it to a JSON object") from None
        if not isinstance(d, dict):
            raise TandemError(f"${var} must be a JSON object, got {type(d).__name__}")
        enabled = legacy.pop_switch(d, True)
        if not isinstance(enabled, bool):
            raise TandemError(f"${var}.enabled must be true or false, got {enabled!r}")
        if not enabled:
            return None
        return cls.from_dict({k: v for k, v in d.items() if k not in legacy.LOSS_KEYS_BESIDE_PROCESS}, where=f"${var}")
