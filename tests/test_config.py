"""TandemConfig: validation, legacy aliases, the legacy environment variable."""

import json

import pytest

from tandem.config import TandemConfig
from tandem.errors import TandemError


def test_defaults_are_the_papers_canonical_config():
    cfg = TandemConfig()
    assert (cfg.selection_strategy, cfg.prob_senior, cfg.max_gap_tokens) == ("word", 0.5, 32)
    assert cfg.junior_token_loss_weight == 0.0


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"selection_strategy": "sentance"}, "unknown selection_strategy"),
        ({"prob_senior": 1.5}, "prob_senior"),
        ({"prob_senior": -0.1}, "prob_senior"),
        ({"max_gap_tokens": 0}, "max_gap_tokens"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"first_author": "teacher"}, "first_author"),
        ({"junior_token_loss_weight": -1}, "junior_token_loss_weight"),
        ({"boundary_token_ids": [1, -2]}, "boundary_token_ids"),
    ],
)
def test_invalid_values_are_refused_with_a_message_naming_the_field(kwargs, fragment):
    with pytest.raises(TandemError, match=fragment):
        TandemConfig(**kwargs)


def test_legacy_keys_are_accepted_as_aliases():
    cfg = TandemConfig.from_dict({"prob_primary": 0.3, "tandem_jr_tkn_weight": 0.1, "frozen_model": "base"})
    assert (cfg.prob_senior, cfg.junior_token_loss_weight, cfg.junior_model) == (0.3, 0.1, "base")


def test_legacy_author_names_map_to_paper_names():
    assert TandemConfig(first_author="primary").first_author == "senior"
    assert TandemConfig(first_author="frozen").first_author == "junior"


def test_conflicting_legacy_and_new_key_is_an_error():
    with pytest.raises(TandemError, match="prob_primary"):
        TandemConfig.from_dict({"prob_primary": 0.3, "prob_senior": 0.7})


def test_unknown_keys_are_kept_in_extra():
    cfg = TandemConfig.from_dict({"selection_strategy": "step", "gpu_memory_utilization": 0.4})
    assert cfg.extra == {"gpu_memory_utilization": 0.4}


def test_legacy_env_var_is_read(monkeypatch):
    monkeypatch.setenv("VLLM_TANDEM_CONFIG", json.dumps({"selection_strategy": "chunk", "chunk_size": 8}))
    cfg = TandemConfig.from_env()
    assert (cfg.selection_strategy, cfg.chunk_size) == ("chunk", 8)


def test_malformed_env_var_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("VLLM_TANDEM_CONFIG", "{not json")
    with pytest.raises(TandemError, match="VLLM_TANDEM_CONFIG"):
        TandemConfig.from_env()


def test_unset_env_var_gives_none(monkeypatch):
    monkeypatch.delenv("VLLM_TANDEM_CONFIG", raising=False)
    assert TandemConfig.from_env() is None


def test_boundary_ids_load_from_a_json_file(tmp_path):
    path = tmp_path / "ids.json"
    path.write_text("[5, 3, 3, 9]")
    assert TandemConfig(boundary_token_ids=str(path)).explicit_boundary_ids() == [3, 5, 9]


def test_missing_boundary_file_is_a_clear_error(tmp_path):
    with pytest.raises(TandemError, match="not found"):
        TandemConfig(boundary_token_ids=str(tmp_path / "nope.json")).explicit_boundary_ids()
