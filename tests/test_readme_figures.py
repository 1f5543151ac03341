"""README's figures outside result blocks and wall times are the files' they cite, to the digit shown.

Result blocks are `tests/test_rendered_numbers.py`'s, wall times `tests/test_readme_times.py`'s,
the CI table `tests/test_readme_ci_table.py`'s. This file holds the rest: the scale path's
throughput ratios (the vLLM benchmarks' JSON) and the size of the real test data (the files
`scripts/shared_data.sha256` pins, as `../shared/data` holds them).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BENCH = ROOT / "model_spec" / "bench"


def _said(pattern: str) -> re.Match:
    found = re.search(pattern, README.replace("\n", " "))
    assert found, f"README no longer says {pattern!r}: update this test with the sentence"
    return found


def test_the_split_and_shared_throughput_ratios_are_the_benchmarks():
    said = _said(r"on CPU (\d\.\d\d)× solo throughput, against (\d\.\d\d)–(\d\.\d\d)× for both on one device")
    split = json.loads((BENCH / "bench_vllm_split.json").read_text())
    shared = [split["ratio_tandem_over_solo"], json.loads((BENCH / "bench_vllm.json").read_text())["ratio_tandem_over_solo"]]
    assert float(said.group(1)) == round(split["ratio_split_over_solo"], 2)
    assert (float(said.group(2)), float(said.group(3))) == (round(min(shared), 2), round(max(shared), 2))


def test_the_real_test_datas_size_is_what_the_pinned_files_weigh(shared_data):
    said = float(_said(r"fetch_shared_data\.py` \((\d+\.\d) MB as written").group(1))
    names = [line.split()[1] for line in (ROOT / "scripts" / "shared_data.sha256").read_text().splitlines() if line.strip()]
    missing = [n for n in names if not (shared_data / n).is_file()]
    if missing:
        pytest.skip(f"needs the real test data: {len(missing)} pinned file(s) absent, e.g. {missing[0]}")
    assert said == round(sum((shared_data / n).stat().st_size for n in names) / 1e6, 1)
