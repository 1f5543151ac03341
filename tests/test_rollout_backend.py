"""`tandem_backends.registry.build_backend`: a rollout backend built from its settings, through the registry."""

from __future__ import annotations

import pytest

from tandem.process.config import TandemConfig
from tandem.reference.engine import TandemEngine
from tandem.errors import TandemError
from tandem.models.loading import load_model, load_tokenizer
from tandem.rollout.sampling import SamplingConfig
from tandem_backends.registry import build_backend

GREEDY = SamplingConfig(temperature=0.0, max_new_tokens=12, seed=0)
KEYS = [11, 12]


def prompts(tokenizer) -> list[list[int]]:
    return [tokenizer("2 + 3 =")["input_ids"], tokenizer("7 - 4 =")["input_ids"]]


def test_from_paths_it_builds_the_engine_one_would_build_by_hand(tiny_dir, tiny_dir_seed1):
    cfg = TandemConfig(selection_strategy="bernoulli", prob_senior=0.5, seed=3)  # a coin at every token
    built = build_backend("engine", tiny_dir, tiny_dir_seed1, cfg)
    tok = load_tokenizer(tiny_dir)
    by_hand = TandemEngine(load_model(tiny_dir, "float32", "cpu"), load_model(tiny_dir_seed1, "float32", "cpu"), tok, cfg)
    got, want = (b.generate(prompts(tok), GREEDY, KEYS) for b in (built, by_hand))
    assert [(r.token_ids, r.authorship_mask) for r in got] == [(r.token_ids, r.authorship_mask) for r in want]
    assert any(0 < sum(r.authorship_mask) < len(r.authorship_mask) for r in got), "both authors must write"


def test_without_a_junior_the_senior_writes_alone(tiny_dir):
    backend = build_backend("engine", tiny_dir)
    out = backend.generate(prompts(backend.tokenizer), GREEDY, KEYS, solo=True)
    assert backend.junior is None and all(r.authorship_mask == [1] * len(r.token_ids) for r in out)


def test_loaded_models_are_used_as_they_are(tiny_dir):
    senior = load_model(tiny_dir, "float32", "cpu")
    backend = build_backend("engine", senior, tokenizer=load_tokenizer(tiny_dir))
    assert backend.senior.models[0] is senior


def test_an_unknown_kind_is_refused_before_any_model_loads(tmp_path):
    with pytest.raises(TandemError, match="unknown backend 'hf'; choose one of engine, vllm"):
        build_backend("hf", tmp_path / "missing")
