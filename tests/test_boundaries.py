"""Boundary sets derived from real tokenizers in ../shared/data/tokenizers (see its SOURCES.md)."""

import pytest

from tandem.process.boundaries import (
    boundary_ids, config_boundary_lookup, derive_boundary_ids, lookup_size, special_ids, word_marker,
)
from tandem.process.config import TandemConfig
from tandem.errors import TandemError


def load(shared_data, name):
    from tandem.models.loading import load_tokenizer

    if name == "llama2":
        pytest.importorskip("sentencepiece", reason="the Llama-2 tokenizer.model needs sentencepiece")
    return load_tokenizer(shared_data / "tokenizers" / name)  # gpt2: vocab.json + merges.txt only


@pytest.fixture(scope="module")
def qwen3(shared_data):
    return load(shared_data, "qwen3")


def test_qwen3_word_boundaries_match_the_papers_53021_ids(qwen3):
    assert len(boundary_ids(qwen3, "word")) == 53021


def test_qwen25_has_the_same_word_boundaries_as_qwen3(shared_data, qwen3):
    assert boundary_ids(load(shared_data, "qwen2.5"), "word") == boundary_ids(qwen3, "word")


@pytest.mark.parametrize("name, marker, count", [("gpt2", "\u0120", 33135), ("llama2", "\u2581", 16409),
                                                  ("phi3-mini", "\u2581", 16409)])
def test_word_marker_and_count_per_tokenizer_family(shared_data, name, marker, count):
    tok = load(shared_data, name)
    assert word_marker(tok) == marker
    assert len(boundary_ids(tok, "word")) == count


def test_special_tokens_are_never_boundaries(qwen3):
    special = special_ids(qwen3)
    assert special and all(not (special & set(boundary_ids(qwen3, k))) for k in ("word", "sentence", "step"))


def test_step_boundaries_are_exactly_the_ids_whose_text_holds_a_blank_line(qwen3):
    ids = boundary_ids(qwen3, "step")
    assert qwen3.convert_tokens_to_ids("\u010a\u010a") in ids  # "\n\n"
    assert qwen3.convert_tokens_to_ids("\u010a") not in ids  # a single newline is not a step end
    assert all("\n\n" in qwen3.decode([i]) for i in ids)


def test_sentence_boundaries_include_terminal_punctuation_and_exclude_plain_words(qwen3):
    ids = set(boundary_ids(qwen3, "sentence"))
    for text in (".", "!", "?", ".\n\n", '."'):
        tid = qwen3.convert_tokens_to_ids(qwen3.tokenize(text))
        assert len(tid) == 1 and tid[0] in ids, text
    assert qwen3.convert_tokens_to_ids("\u0120the") not in ids
    assert qwen3.convert_tokens_to_ids(",") not in ids


def test_boundary_sets_are_cached_on_the_tokenizer(qwen3):
    assert boundary_ids(qwen3, "word") is boundary_ids(qwen3, "word")


def test_unknown_boundary_kind_is_refused(qwen3):
    with pytest.raises(TandemError, match="unknown boundary kind"):
        derive_boundary_ids(qwen3, "paragraph")


def test_tokenizer_without_word_markers_is_refused_for_word():
    class CharTokenizer:
        def get_vocab(self):
            return {"a": 0, "b": 1, " ": 2}

    with pytest.raises(TandemError, match="boundary_token_ids"):
        word_marker(CharTokenizer())


def test_every_backend_sizes_its_lookup_by_one_rule(qwen3):
    """Model width and tokenizer size, whichever is larger: Qwen3 pads its 151,669 ids to 151,936 logits."""
    assert lookup_size(151936, qwen3) == 151936  # the engines know the model's width
    assert lookup_size(None, qwen3) == len(qwen3) == 151669  # verl's agent loop knows the tokenizer only
    assert lookup_size(1000, qwen3) == len(qwen3)  # a model narrower than its tokenizer still covers every id
    cfg = TandemConfig(boundary_token_ids=[5, 151700])  # an explicit id in the padded region
    assert config_boundary_lookup(cfg, qwen3, 151936)[151700] and config_boundary_lookup(cfg, None, 151936)[151700]
    with pytest.raises(TandemError, match="vocabulary size or its tokenizer"):
        lookup_size(None, None)
