"""Benchmark presets, the paper's groupings, file loaders with field mappings, and the chat prompt."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tandem.errors import TandemError
from tandem_eval.core.datasets import AMC_ERRATA, FieldMap, load_benchmark, load_benchmarks, load_file
from tandem_eval.core.prompts import INSTRUCTION, chat_prompt_ids, chat_prompt_text


def test_amc_23_25_is_the_papers_121_problem_set(shared_data):
    name, problems = load_benchmark("amc_23_25", shared_data, allow_hub=False)
    assert name == "amc_23_25"
    assert Counter(p.source for p in problems) == {"amc2023": 40, "amc2024": 41, "amc2025": 40}
    assert {p.benchmark for p in problems} == {"amc_23_25"}


def test_aime_24_26_pools_90_problems_and_keeps_zero_padded_answers(shared_data):
    _, problems = load_benchmark("aime_24_26", shared_data, allow_hub=False)
    assert len(problems) == 90
    assert {p.id: p.answer for p in problems}["aime2024-I-2"] == "025"


def test_amc_errata_are_fixed_by_default_and_kept_on_request(shared_data):
    _, fixed = load_benchmark("amc2024", shared_data, allow_hub=False)
    _, source = load_benchmark("amc2024", shared_data, errata="source", allow_hub=False)
    assert {p.id: p.answer for p in fixed if p.id in AMC_ERRATA} == {k: v[1] for k, v in AMC_ERRATA.items()}
    assert {p.id: p.answer for p in source if p.id in AMC_ERRATA} == {k: v[0] for k, v in AMC_ERRATA.items()}


def test_gsm8k_preset_keeps_comma_answers_for_the_grader(shared_data):
    _, problems = load_benchmark("gsm8k", shared_data, allow_hub=False)
    assert len(problems) == 1319
    assert sum("," in p.answer for p in problems) == 14


def test_max_problems_keeps_the_first_problems_of_each_benchmark(shared_data):
    out = load_benchmarks(["minerva", "math500"], shared_data, allow_hub=False, max_problems=3)
    assert {k: len(v) for k, v in out.items()} == {"minerva": 3, "math500": 3}


def test_missing_local_file_names_the_fix(tmp_path):
    with pytest.raises(TandemError, match="--data-dir"):
        load_benchmark("aime2024", tmp_path, allow_hub=False)


def test_id_defined_subset_needs_the_local_files(tmp_path):
    with pytest.raises(TandemError, match="amc2024.jsonl"):
        load_benchmark("amc_23_25", tmp_path)  # amc2023 would come from the hub; the subsets cannot


def test_data_dir_comes_from_the_environment(shared_data, monkeypatch):
    monkeypatch.setenv("TANDEM_DATA_DIR", str(shared_data))
    _, problems = load_benchmark("aime2025", allow_hub=False)
    assert len(problems) == 30


def test_unknown_benchmark_lists_the_choices():
    with pytest.raises(TandemError, match="aime_24_26"):
        load_benchmark("aime2099")


def test_jsonl_file_with_a_field_mapping(tmp_path):
    path = tmp_path / "mine.jsonl"
    path.write_text("\n".join(json.dumps({"q": f"problem {i}", "sol": f"work #### {i},000"}) for i in range(3)) + "\n")
    problems = load_file(path, FieldMap(problem="q", answer="sol", id=None, answer_after="####"))
    assert [(p.id, p.problem, p.answer, p.benchmark) for p in problems][1] == ("mine-1", "problem 1", "1,000", "mine")


def test_parquet_file_loads_like_jsonl(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "set.parquet"
    pq.write_table(pa.table({"idx": [7, 8], "question": ["a?", "b?"], "answer": ["1", "2"]}), path)
    name, problems = load_benchmark(str(path), fields=FieldMap(problem="question", id="idx"))
    assert name == "set"
    assert [(p.id, p.problem, p.answer) for p in problems] == [("7", "a?", "1"), ("8", "b?", "2")]


def test_missing_column_names_the_columns_and_the_flag(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"question": "x", "answer": "1"}) + "\n")
    with pytest.raises(TandemError, match=r"lacks column\(s\) \['problem', 'id'\].*--fields"):
        load_file(path)


def test_bad_fields_spec_names_the_format():
    with pytest.raises(TandemError, match="problem=question"):
        FieldMap.parse("problem:question")


def test_chat_prompt_uses_the_template_and_the_instruction(tiny_dir):
    from tandem.models.loading import load_tokenizer

    tok = load_tokenizer(tiny_dir)
    text = chat_prompt_text(tok, "What is 2+3?")
    assert text == f"<|im_start|>user\nWhat is 2+3?\n{INSTRUCTION}<|im_end|>\n<|im_start|>assistant\n"
    assert tok.decode(chat_prompt_ids(tok, "What is 2+3?")) == text


def test_presets_missing_locally_resolve_to_their_hub_copy(tmp_path, monkeypatch):
    import datasets

    calls = []

    def fake_load_dataset(path, config=None, split=None):
        calls.append((path, config, split))
        return [{"question": "Tom has 1,000 pens...", "answer": "He has 1000 + 125 = 1,125\n#### 1,125"}]

    monkeypatch.setattr(datasets, "load_dataset", fake_load_dataset)
    name, problems = load_benchmark("gsm8k", tmp_path)
    assert calls == [("openai/gsm8k", "main", "test")]
    assert (name, problems[0].id, problems[0].answer, problems[0].source) == ("gsm8k", "gsm8k-0", "1,125", "gsm8k")
