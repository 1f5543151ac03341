"""One builder per file: the sources' bytes, in the order of the target's URLs, in; the file's
bytes out. Tokenizer files are copied as they are (`copy`) or cut out of their container.
"""

from __future__ import annotations

import csv
import io
import json
import tarfile

from .basics import FetchError
from .sources import DEEPSCALER_SUFFIX
from .transforms import (aime_split_id, aime_url_id, drop_duplicates, gsm8k_answer, integer_answer, last_boxed,
                         read_jsonl, row, strip_suffix, to_jsonl)


def copy(raw: bytes) -> bytes:
    return raw


def tar_member(name: str, tgz: bytes) -> bytes:
    with tarfile.open(fileobj=io.BytesIO(tgz), mode="r:gz") as tar:
        return tar.extractfile(name).read()


def chat_template(config: bytes) -> bytes:
    return json.loads(config)["chat_template"].encode("utf-8")


def build_aime2024(raw: bytes) -> bytes:
    return to_jsonl(row(aime_url_id(r["url"]), r["problem"], r["answer"], "aime2024") for r in read_jsonl(raw))


def build_aime2025(*raw: bytes) -> bytes:
    """`raw`: per exam (I, then II), its answers.csv and then problems/1..15.tex."""
    rows = []
    for part, chunk in (("I", raw[:16]), ("II", raw[16:])):
        answers = {r["id"]: r["answer"] for r in csv.DictReader(io.StringIO(chunk[0].decode("utf-8")))}
        for n, tex in enumerate(chunk[1:], start=1):
            rows.append(row(f"aime2025-{part}-{n}", tex.decode("utf-8").strip(), answers[str(n)], "aime2025"))
    return to_jsonl(rows)


def build_aime2026(raw: bytes) -> bytes:
    return to_jsonl(row(aime_split_id(2026, int(r["id"])), r["problem"].strip(), r["answer"], "aime2026")
                    for r in read_jsonl(raw))


def build_amc2023(raw: bytes) -> bytes:
    return to_jsonl(row(f"amc2023-{r['id']}", r["problem"], integer_answer(r["answer"]), "amc2023")
                    for r in read_jsonl(raw))


def build_marin_amc(source: str, raw: bytes) -> bytes:
    return to_jsonl(row(r["id"], r["question"], r["answer"], source) for r in read_jsonl(raw))


def build_minerva(raw: bytes) -> bytes:
    return to_jsonl(row(f"minerva-{r['idx']}", r["problem"], last_boxed(r["solution"]), "minerva_math")
                    for r in read_jsonl(raw))


def build_math500(raw: bytes) -> bytes:
    return to_jsonl(row(r["unique_id"], r["problem"], r["answer"], "math500") for r in read_jsonl(raw))


def build_gsm8k(split: str, raw: bytes) -> bytes:
    return to_jsonl(row(f"gsm8k-{split}-{k}", r["question"], gsm8k_answer(r["answer"]), f"gsm8k_{split}")
                    for k, r in enumerate(read_jsonl(raw)))


def build_aime_1983_2023(raw: bytes) -> bytes:
    part = {1: "I", 2: "II"}
    return to_jsonl(row(f"aime{r['year']}-{part[r['aime_number']]}-{r['problem_number']}", r["problem"],
                        r["answer"], "aime_1983_2023") for r in json.loads(raw))


def build_math_train(raw: bytes) -> bytes:
    # str(): the shared file keeps the source's two null answers as the string "None"
    # (math-train-886 and -1009); only the two empty-string answers were dropped.
    return to_jsonl(row(f"math-train-{k}", r["problem"], str(r["answer"]), "math_train")
                    for k, r in enumerate(json.loads(raw)) if str(r["answer"]).strip())


def verl_rows(parquet: bytes) -> list[dict]:
    """DeepScaleR rows from a verl parquet: the user prompt minus verl's instruction suffix."""
    try:
        import pyarrow.parquet as pq  # lazy: only these two sources need it
    except ImportError:
        raise FetchError("reading its parquet sources needs pyarrow: `pip install pyarrow` "
                         "(the project's dev and eval extras include it), then run the script again")

    return [row(f"deepscaler-pid{r['problem_id']}", strip_suffix(r["prompt"][0]["content"], DEEPSCALER_SUFFIX),
                r["ground_truth"], "deepscaler")
            for r in pq.read_table(io.BytesIO(parquet)).to_pylist()]


def build_deepscaler_partial(meta_reason: bytes, train_parquet: bytes, val_parquet: bytes) -> bytes:
    rows = [row(f"deepscaler-mr{k}", r["problem"], r["answer"], "deepscaler")
            for k, r in enumerate(json.loads(meta_reason))]
    return to_jsonl(drop_duplicates(rows + verl_rows(train_parquet) + verl_rows(val_parquet)))
