"""The release's DeepScaleR held-out split in scripts/prepare_deepscaler.py, checked against pandas itself."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

pd = pytest.importorskip("pandas", reason="the split is checked against pandas' own DataFrame.sample")
pytest.importorskip("datasets", reason="the script writes parquet with the datasets library")

import prepare_deepscaler  # noqa: E402
from tandem.errors import TandemError  # noqa: E402


@pytest.mark.parametrize("rows,n,seed", [(40309, 1000, 0), (2771, 1000, 0), (50, 7, 3)])
def test_positions_are_what_pandas_sample_draws(rows, n, seed):
    expected = pd.DataFrame({"x": range(rows)}).sample(n=n, random_state=seed).index.tolist()
    assert prepare_deepscaler.heldout_positions(rows, n, seed) == expected


def test_split_of_the_partial_file_is_pandas_random_state_0(shared_data, tmp_path):
    path = shared_data / "deepscaler_train_partial.jsonl"
    df = pd.read_json(path, lines=True, dtype=False)
    held = df.sample(n=1000, random_state=0)
    train = df.drop(held.index)
    counts = prepare_deepscaler.prepare(tmp_path, str(path), str(shared_data), val=())
    assert counts == {"deepscaler/train.parquet": len(df) - 1000, "deepscaler/heldout.parquet": 1000}
    out_train = pd.read_parquet(tmp_path / "deepscaler" / "train.parquet")
    out_held = pd.read_parquet(tmp_path / "deepscaler" / "heldout.parquet")
    assert [r["id"] for r in out_held["extra_info"]] == held["id"].tolist()  # the drawn order, as pandas keeps it
    assert [r["id"] for r in out_train["extra_info"]] == train["id"].tolist()  # file order
    assert [r["index"] for r in out_held["extra_info"]] == held.index.tolist()
    assert {r["split"] for r in out_held["extra_info"]} == {"heldout"}
    assert [r["ground_truth"] for r in out_held["reward_model"]] == held["answer"].astype(str).tolist()


def test_switch_off_trains_on_every_row_and_removes_a_stale_slice(shared_data, tmp_path):
    path = str(shared_data / "deepscaler_train_partial.jsonl")
    prepare_deepscaler.prepare(tmp_path, path, str(shared_data), val=())
    assert (tmp_path / "deepscaler" / "heldout.parquet").is_file()
    counts = prepare_deepscaler.prepare(tmp_path, path, str(shared_data), val=(), heldout=0, max_train=30)
    assert counts == {"deepscaler/train.parquet": 30}
    assert not (tmp_path / "deepscaler" / "heldout.parquet").exists()


def test_max_train_truncates_after_the_split(shared_data, tmp_path):
    path = shared_data / "deepscaler_train_partial.jsonl"
    df = pd.read_json(path, lines=True, dtype=False)
    rest = df.drop(df.sample(n=1000, random_state=0).index)
    prepare_deepscaler.prepare(tmp_path, str(path), str(shared_data), val=(), max_train=25)
    out = pd.read_parquet(tmp_path / "deepscaler" / "train.parquet")
    assert [r["id"] for r in out["extra_info"]] == rest["id"].tolist()[:25]


@pytest.mark.parametrize("heldout", [-1, 12, 40])
def test_a_slice_that_leaves_nothing_to_train_is_refused(tmp_path, heldout):
    jsonl = tmp_path / "tiny.jsonl"
    jsonl.write_text("".join(f'{{"id": "p{i}", "problem": "1+{i}?", "answer": "{i + 1}"}}\n' for i in range(12)))
    with pytest.raises(TandemError, match="--heldout"):
        prepare_deepscaler.prepare(tmp_path / "out", str(jsonl), None, val=(), heldout=heldout)
    assert not (tmp_path / "out").exists()


def test_cli_flag_turns_the_split_off(tmp_path, capsys):
    jsonl = tmp_path / "tiny.jsonl"
    jsonl.write_text("".join(f'{{"id": "p{i}", "problem": "1+{i}?", "answer": "{i + 1}"}}\n' for i in range(12)))
    prepare_deepscaler.main(["--out", str(tmp_path / "o"), "--train", str(jsonl), "--heldout", "0",
                             "--val", str(jsonl)])
    assert "train.parquet: 12 rows" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="--heldout 1000 leaves no training rows out of 12"):
        prepare_deepscaler.main(["--out", str(tmp_path / "p"), "--train", str(jsonl), "--val", str(jsonl)])


def test_paper_preset_prompts_rows_as_the_release(shared_data, tmp_path):
    from tandem_eval.core.prompts import PAPER_INSTRUCTION

    path = shared_data / "deepscaler_train_partial.jsonl"
    prepare_deepscaler.prepare(tmp_path, str(path), str(shared_data), val=(), max_train=3, preset="paper")
    first = pd.read_json(path, lines=True, dtype=False).drop(
        pd.read_json(path, lines=True, dtype=False).sample(n=1000, random_state=0).index).iloc[0]
    row = pd.read_parquet(tmp_path / "deepscaler" / "train.parquet").iloc[0]
    assert list(row["prompt"])[0]["content"] == first["problem"] + PAPER_INSTRUCTION
