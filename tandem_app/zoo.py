"""The tiny model zoo: a locally trained tokenizer and a small Qwen3-config model.

Nothing is downloaded. The tokenizer is a byte-level BPE (word starts marked `Ġ`, digits
split one per token as in Qwen) trained with `tokenizers` on text from the synthetic
task (`tandem_app.task`) under a fixed corpus seed, so every zoo model shares one vocabulary
whatever its weight seed. It carries a ChatML chat template. The model is a randomly
initialised `Qwen3ForCausalLM`; `tandem-rlvr sft` turns it into a pre-RL base.

`add_format_tokens` copies a zoo model with a tokenizer built with RLT's format
(`tandem.rewards.solution_prompt.FORMAT_TOKENS` as single tokens, after the BPE's ids, so every
other token keeps its id and the model its weights): trained on task text only, the BPE
splits RLT's tags and instruction into near-single characters (issue 44).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from tandem.errors import TandemError

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)
CORPUS_SEED = 1234  # fixed: all zoo models share this tokenizer
# Qwen-style pre-tokenisation: one digit per token, a space joins the word after it, and
# newline runs stay whole (so `\n\n` step boundaries become single tokens).
PRETOKENIZE_PATTERN = r"[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"


@dataclass(frozen=True)
class TinyModelConfig:
    """Shape of the tiny Qwen3 model (defaults give about 1M parameters)."""

    vocab_size: int = 512
    hidden_size: int = 128
    intermediate_size: int = 384
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    head_dim: int = 32
    max_position_embeddings: int = 1024
    rope_theta: float = 10000.0


# A smaller shape with the same vocabulary (so the same tokenizer): another depth, width,
# query-head and KV-head count. A junior of another size, as Qwen3-0.6B beside Qwen3-4B (those
# differ in query heads only). The head size stays 32: vLLM's CPU attention has no kernel for 16.
SMALL_SHAPE = TinyModelConfig(hidden_size=64, intermediate_size=192, num_hidden_layers=2,
                              num_attention_heads=2, num_key_value_heads=1, head_dim=32)


def _corpus(n_problems: int = 3000) -> list[str]:
    from tandem_app.task import generate_problems

    texts = []
    for split in ("train", "validation"):
        for p in generate_problems(split, n_problems if split == "train" else n_problems // 10, seed=CORPUS_SEED):
            texts.append(f"<|im_start|>user\n{p.prompt}<|im_end|>\n<|im_start|>assistant\n{p.solution}<|im_end|>\n")
    return texts


def train_tokenizer(vocab_size: int = 512):
    """A byte-level BPE `PreTrainedTokenizerFast` trained on the synthetic task's text."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(PRETOKENIZE_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_corpus(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None
    )
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_tiny(out: str | Path, seed: int = 0, cfg: TinyModelConfig | None = None) -> Path:
    """Write an HF model + tokenizer directory at `out`; return its path."""
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from tandem.io.run_lock import check_out_path, unwritable

    cfg = cfg or TinyModelConfig()
    out = check_out_path(out)  # a file, or a path under one: one line before the tokenizer is trained
    if out.exists() and any(out.iterdir()):
        raise TandemError(f"{out} exists and is not empty; choose a new --out directory")
    tokenizer = train_tokenizer(cfg.vocab_size)
    if len(tokenizer) > cfg.vocab_size:
        raise TandemError(f"tokenizer has {len(tokenizer)} ids but the model only {cfg.vocab_size}")
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    model_cfg = Qwen3Config(
        **{k: v for k, v in asdict(cfg).items()},
        tie_word_embeddings=True,
        eos_token_id=im_end,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        use_sliding_window=False,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(model_cfg)
    model.generation_config.eos_token_id = im_end
    meta = {"seed": seed, "parameters": sum(p.numel() for p in model.parameters()), **asdict(cfg)}
    try:
        out.mkdir(parents=True, exist_ok=True)
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        (out / "tandem_zoo.json").write_text(json.dumps(meta, indent=2) + "\n")  # last: the model is complete
    except OSError as e:  # read-only, no permission, a full disk
        raise unwritable("--out", out, e) from None
    return out


def add_format_tokens(src: str | Path, out: str | Path) -> Path:
    """Copy the model dir `src` to `out` with RLT's format tokens added to its tokenizer; returns `out`.

    The tokens take the ids after the tokenizer's last one, which the zoo model's embedding
    already holds (the BPE stops short of `vocab_size`), so the weights are copied unchanged
    and an untrained row stands for each tag until training writes it. A finished `out` (its
    tokenizer holds the tokens) is reused.
    """
    import shutil

    from tandem.models.loading import load_tokenizer
    from tandem.rewards.solution_prompt import FORMAT_TOKENS, has_format_tokens

    src, out = Path(src), Path(out)
    if (out / "config.json").is_file() and has_format_tokens(load_tokenizer(out)):
        return out
    tokenizer = load_tokenizer(src)
    tokenizer.add_special_tokens({"additional_special_tokens": list(FORMAT_TOKENS)})
    rows = json.loads((src / "config.json").read_text())["vocab_size"]
    if len(tokenizer) > rows:
        raise TandemError(f"{src}: its tokenizer with RLT's {len(FORMAT_TOKENS)} format tokens has {len(tokenizer)} "
                          f"ids but the model {rows} embedding rows; build the model with a larger vocab_size")
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(src, tmp)
    tokenizer.save_pretrained(tmp)
    shutil.rmtree(out, ignore_errors=True)
    tmp.rename(out)  # whole or absent
    return out
