"""scripts/prepare_deepscaler.py on the real files in ../shared/data (read there, written to tmp)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

pd = pytest.importorskip("pandas", reason="pandas is needed to read the parquet files")
pytest.importorskip("datasets", reason="the script writes parquet with the datasets library")

import prepare_deepscaler  # noqa: E402


@pytest.fixture(scope="module")
def written(shared_data, tmp_path_factory):
    out = tmp_path_factory.mktemp("parquet")
    counts = prepare_deepscaler.prepare(
        out, str(shared_data / "deepscaler_train_partial.jsonl"), str(shared_data), max_train=40
    )
    return out, counts


def test_writes_the_four_files_the_launchers_read(written):
    out, counts = written
    assert counts == {
        "deepscaler/train.parquet": 40,
        "deepscaler/heldout.parquet": 1000,  # the release's held-out slice
        "amc_23_25/test.parquet": 121,  # the paper's AMC 2023-2025 set
        "aime_24_26/test.parquet": 90,
        "minerva/test.parquet": 272,
    }
    assert all((out / rel).is_file() for rel in counts)


def test_rows_follow_verls_rl_schema(written, shared_data):
    out, _ = written
    df = pd.read_parquet(out / "deepscaler" / "train.parquet")
    assert list(df.columns) == ["data_source", "prompt", "ability", "reward_model", "extra_info"]
    row = df.iloc[0]
    source = pd.read_json(shared_data / "deepscaler_train_partial.jsonl", lines=True, dtype=False)
    first = source.drop(source.sample(n=1000, random_state=0).index).iloc[0]  # the first row not held out
    assert row["data_source"] == "deepscaler" and row["ability"] == "math"
    assert list(row["prompt"])[0]["role"] == "user"
    assert list(row["prompt"])[0]["content"].startswith(first["problem"])
    assert "\\boxed{}" in list(row["prompt"])[0]["content"]
    assert row["reward_model"] == {"style": "rule", "ground_truth": first["answer"]}
    assert row["extra_info"]["split"] == "train" and row["extra_info"]["id"] == first["id"]


def test_validation_rows_are_named_after_their_benchmark(written):
    out, _ = written
    df = pd.read_parquet(out / "aime_24_26" / "test.parquet")
    assert set(df["data_source"]) == {"aime_24_26"}
    assert set(r["split"] for r in df["extra_info"]) == {"test"}


def test_verls_dataset_reads_the_output(written, shared_data):
    pytest.importorskip("verl", reason="verl 0.9.1 is not installed")
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl.utils.dataset.rl_dataset import RLHFDataset

    out, _ = written
    tokenizer = AutoTokenizer.from_pretrained(shared_data / "tokenizers" / "qwen3")
    cfg = OmegaConf.create({"max_prompt_length": 1024, "filter_overlong_prompts": False, "truncation": "error"})
    ds = RLHFDataset([str(out / "aime_24_26" / "test.parquet")], tokenizer, cfg)
    item = ds[0]
    assert len(ds) == 90 and item["data_source"] == "aime_24_26"
    first = pd.read_parquet(out / "aime_24_26" / "test.parquet").iloc[0]
    assert item["reward_model"]["ground_truth"] == first["reward_model"]["ground_truth"]
    assert item["raw_prompt"][0]["content"] == list(first["prompt"])[0]["content"]


def test_empty_answer_is_refused():
    from tandem.errors import TandemError
    from tandem_eval.core.datasets import Problem

    with pytest.raises(TandemError, match="empty answer"):
        prepare_deepscaler.verl_row(Problem("x", "1+1?", " ", "src", "b"), "train", 0, "deepscaler")
