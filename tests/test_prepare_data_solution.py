"""scripts/prepare_deepscaler.py keeps each training row's worked solution in `extra_info.solution` (SPEC §13)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))

pd = pytest.importorskip("pandas", reason="pandas is needed to read the parquet files")
pytest.importorskip("datasets", reason="the script writes parquet with the datasets library")

import prepare_deepscaler  # noqa: E402


def write_rows(path: Path, solutions: list) -> Path:
    rows = [{"id": f"r{i}", "problem": f"What is {i}+1?", "answer": str(i + 1), "source": "deepscaler",
             **({} if s is ... else {"solution": s})} for i, s in enumerate(solutions)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_the_solution_column_reaches_extra_info_and_rows_without_one_are_counted(tmp_path):
    src = write_rows(tmp_path / "train.jsonl", ["one plus one is two", "", None, "3 + 1 = 4", "  "])
    notes = []
    prepare_deepscaler.prepare(tmp_path / "out", str(src), None, val=(), heldout=0, report=notes.append)
    extra = pd.read_parquet(tmp_path / "out" / "deepscaler" / "train.parquet")["extra_info"].tolist()
    assert [e["solution"] for e in extra] == ["one plus one is two", None, None, "3 + 1 = 4", None]
    assert notes == [f"{src}: 3 of 5 rows have no worked solution (extra_info.solution is null); verifier-only runs "
                     "train on them, partner_reward.target=solution and writer_sees_solution refuse them"]


def test_held_out_rows_keep_their_solution_too_and_validation_rows_have_none(tmp_path):
    src = write_rows(tmp_path / "train.jsonl", [f"solution {i}" for i in range(6)])
    notes = []
    prepare_deepscaler.prepare(tmp_path / "out", str(src), None, val=(str(src),), heldout=2, report=notes.append)
    for name in ("train", "heldout"):
        extra = pd.read_parquet(tmp_path / "out" / "deepscaler" / f"{name}.parquet")["extra_info"].tolist()
        assert [e["solution"] for e in extra] == [f"solution {e['index']}" for e in extra]
    val = pd.read_parquet(tmp_path / "out" / "train" / "test.parquet")["extra_info"].tolist()
    assert all("solution" not in e or e["solution"] is None for e in val)
    assert notes == [f"{src}: every row has a worked solution (extra_info.solution)"]


def test_the_local_deepscaler_rows_have_no_solution_and_say_so(shared_data, tmp_path, capsys):
    src = shared_data / "deepscaler_train_partial.jsonl"
    prepare_deepscaler.main(["--out", str(tmp_path), "--train", str(src), "--val", str(src), "--max-val", "2",
                             "--max-train", "5"])
    out = capsys.readouterr().out.splitlines()
    # the split is drawn from every row, so the count covers the 5 kept and the 1,000 held out
    assert out[0] == (f"{src}: 1005 of 1005 rows have no worked solution (extra_info.solution is null); "
                      "verifier-only runs train on them, partner_reward.target=solution and writer_sees_solution "
                      "refuse them")
    extra = pd.read_parquet(tmp_path / "deepscaler" / "train.parquet")["extra_info"].tolist()
    assert [e["solution"] for e in extra] == [None] * 5
