"""TandemConfig: strict parsing, validation, legacy aliases, the legacy environment variable."""

import json

import pytest

from tandem.process.config import TandemConfig
from tandem.errors import TandemError
from tandem.loss.loss_config import PolicyLossConfig, TandemLossConfig


def test_defaults_are_the_papers_canonical_config():
    cfg = TandemConfig()
    assert (cfg.selection_strategy, cfg.prob_senior, cfg.max_gap_tokens) == ("word", 0.5, 32)
    assert cfg.placement == "shared"
    assert TandemLossConfig().junior_token_loss_weight == 0.0


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"selection_strategy": "sentance"}, "unknown selection_strategy"),
        ({"prob_senior": 1.5}, "prob_senior"),
        ({"prob_senior": -0.1}, "prob_senior"),
        ({"max_gap_tokens": 0}, "max_gap_tokens"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"first_author": "teacher"}, "first_author"),
        ({"boundary_token_ids": [1, -2]}, "boundary_token_ids"),
        ({"placement": "both"}, "placement must be 'shared' or 'split'"),
    ],
)
def test_invalid_values_are_refused_with_a_message_naming_the_field(kwargs, fragment):
    with pytest.raises(TandemError, match=fragment):
        TandemConfig(**kwargs)


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({"junior_token_loss_weight": -1}, "junior_token_loss_weight must be a number >= 0"),
        ({"junior_token_loss_weight": True}, "junior_token_loss_weight must be a number >= 0"),
        ({"loss_denominator": "senior"}, "loss_denominator must be one of senior_tokens, all_response_tokens"),
    ],
)
def test_invalid_loss_settings_are_refused(kwargs, fragment):
    with pytest.raises(TandemError, match=fragment):
        TandemLossConfig(**kwargs)
    with pytest.raises(TandemError, match=fragment):
        PolicyLossConfig(**kwargs)


def test_legacy_keys_are_accepted_as_aliases():
    cfg = TandemConfig.from_dict({"prob_primary": 0.3, "frozen_model": "base", "first_model": "frozen"})
    assert (cfg.prob_senior, cfg.junior_model, cfg.first_author) == (0.3, "base", "junior")


def test_unknown_key_names_the_nearest_valid_one():
    with pytest.raises(TandemError, match=r"^unknown config key 'prob_senoir': did you mean prob_senior\?$"):
        TandemConfig.from_dict({"prob_senoir": 0.9})


def test_unknown_key_without_a_near_one_lists_the_valid_keys():
    with pytest.raises(TandemError, match=r"key 'gpu_memory_utilization': valid keys: selection_strategy"):
        TandemConfig.from_dict({"gpu_memory_utilization": 0.4})


def test_loss_keys_in_the_process_config_say_where_they_went():
    with pytest.raises(TandemError, match=r"'junior_token_loss_weight' is a loss setting.*loss.junior_token_loss_w"):
        TandemConfig.from_dict({"junior_token_loss_weight": 0.1})
    with pytest.raises(TandemError, match=r"'tandem_jr_tkn_weight' \(legacy\) is a loss setting"):
        TandemConfig.from_dict({"tandem_jr_tkn_weight": 0.1})


@pytest.mark.parametrize(
    "d, fragment",
    [
        ({"prob_senior": "high"}, "prob_senior must be a number, got 'high'"),
        ({"max_gap_tokens": 32.5}, "max_gap_tokens must be an integer, got 32.5"),
        ({"max_gap_tokens": True}, "max_gap_tokens must be an integer, got True"),
        ({"junior_model": 1000.0}, "junior_model must be a string, got 1000.0"),
        ({"boundary_token_ids": [1, "x"]}, "boundary_token_ids must be"),
    ],
)
def test_values_of_the_wrong_type_are_refused_not_converted(d, fragment):
    with pytest.raises(TandemError, match=fragment):
        TandemConfig.from_dict(d)


def test_backend_keys_are_declared_fields():
    cfg = TandemConfig.from_dict({"senior_architecture": "Qwen3ForCausalLM"})
    assert cfg.senior_architecture == "Qwen3ForCausalLM" and cfg.to_dict()["senior_architecture"] == "Qwen3ForCausalLM"
    with pytest.raises(TandemError, match="'extra' is not a key"):
        TandemConfig.from_dict({"extra": {"senior_architecture": "Qwen3ForCausalLM"}})


def test_legacy_author_names_map_to_paper_names():
    assert TandemConfig(first_author="primary").first_author == "senior"
    assert TandemConfig(first_author="frozen").first_author == "junior"


def test_conflicting_legacy_and_new_key_is_an_error():
    with pytest.raises(TandemError, match="prob_primary"):
        TandemConfig.from_dict({"prob_primary": 0.3, "prob_senior": 0.7})


def test_legacy_env_var_is_read(monkeypatch):
    monkeypatch.setenv("VLLM_TANDEM_CONFIG", json.dumps({"selection_strategy": "chunk", "chunk_size": 8}))
    cfg = TandemConfig.from_env()
    assert (cfg.selection_strategy, cfg.chunk_size) == ("chunk", 8)


def test_the_releases_env_json_is_read(monkeypatch, tmp_path):
    ids = tmp_path / "ids.json"
    ids.write_text("[3, 1]")
    release = {"enabled": True, "frozen_model": "org/junior", "selection_strategy": "word", "prob_primary": 0.5,
               "max_gap_tokens": 32, "boundary_token_ids_path": str(ids)}
    monkeypatch.setenv("VLLM_TANDEM_CONFIG", json.dumps(release))
    cfg = TandemConfig.from_env()
    assert (cfg.junior_model, cfg.prob_senior, cfg.explicit_boundary_ids()) == ("org/junior", 0.5, [1, 3])
    monkeypatch.setenv("VLLM_TANDEM_CONFIG", json.dumps({**release, "enabled": False}))
    assert TandemConfig.from_env() is None
    monkeypatch.setenv("VLLM_TANDEM_CONFIG", json.dumps({**release, "frozen_gpu_devices": [1]}))
    assert TandemConfig.from_env().placement == "split"  # the release's junior device is our split placement
    monkeypatch.setenv("VLLM_TANDEM_CONFIG", json.dumps({**release, "frozen_gpu_devices": [1], "placement": "shared"}))
    with pytest.raises(TandemError, match=r"frozen_gpu_devices=\[1\] \(legacy for placement=split\) contradicts"):
        TandemConfig.from_env()


def test_legacy_env_var_drops_the_trainers_loss_keys_and_refuses_typos(monkeypatch):
    monkeypatch.setenv("VLLM_TANDEM_CONFIG", json.dumps({"prob_primary": 0.25, "tandem_jr_tkn_weight": 0}))
    assert TandemConfig.from_env().prob_senior == 0.25
    monkeypatch.setenv("VLLM_TANDEM_CONFIG", json.dumps({"prob_senoir": 0.25}))
    with pytest.raises(TandemError, match=r"'\$VLLM_TANDEM_CONFIG.prob_senoir': did you mean prob_senior\?"):
        TandemConfig.from_env()


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
