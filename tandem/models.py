"""Loading models and tokenizers, and refusing senior/junior pairs that cannot co-write.

A senior and a junior co-write one token sequence, so they must share one vocabulary:
the same token strings at the same ids. `check_same_vocab` fails closed otherwise.
"""

from __future__ import annotations

from pathlib import Path

import torch

from tandem.errors import TandemError

DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_dtype(dtype) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise TandemError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    return DTYPES[dtype]


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")


def _check_local(path: str | Path, wanted=("config.json",), what="model") -> None:
    """Refuse a local path that cannot hold a model/tokenizer (hub names pass through)."""
    p = Path(path)
    looks_local = p.is_absolute() or str(path).startswith(".") or p.exists() or str(path).count("/") > 1
    if looks_local and not any((p / f).is_file() for f in wanted):
        raise TandemError(f"{path}: not a Hugging Face {what} directory (none of {', '.join(wanted)} found there)")


def _first_line(e: Exception) -> str:
    text = str(e).strip() or type(e).__name__
    return text.splitlines()[0]


def _bare_bpe_dir(path: str | Path) -> bool:
    """A GPT-2-style tokenizer directory: vocab.json + merges.txt and no config naming a class."""
    p = Path(path)
    return (p / "vocab.json").is_file() and (p / "merges.txt").is_file() and not any(
        (p / f).is_file() for f in ("tokenizer_config.json", "tokenizer.json"))


def load_tokenizer(path: str | Path):
    """A Hugging Face tokenizer; GPT-2-style directories (vocab.json + merges.txt only) load as GPT-2's."""
    from transformers import AutoTokenizer, GPT2TokenizerFast

    _check_local(path, TOKENIZER_FILES, "tokenizer")
    try:
        if _bare_bpe_dir(path):  # AutoTokenizer cannot tell the class without a config
            return GPT2TokenizerFast.from_pretrained(str(path))
        return AutoTokenizer.from_pretrained(str(path))
    except Exception as e:  # transformers raises OSError, ValueError, KeyError, ... for unreadable directories
        raise TandemError(f"cannot load a tokenizer from {path}: {_first_line(e)}") from None


def load_model(path: str | Path, dtype="float32", device: str | torch.device = "cpu"):
    """An HF causal LM in eval mode, with gradients off (the engine never trains)."""
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    _check_local(path)
    hf_logging.disable_progress_bar()  # per-shard bars drown our own progress and error lines
    try:
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=resolve_dtype(dtype))
    except Exception as e:  # transformers raises OSError, ValueError, KeyError, ... for unreadable checkpoints
        raise TandemError(f"cannot load a model from {path}: {_first_line(e)}") from None
    model.to(device).eval()
    model.requires_grad_(False)
    return model


def check_same_vocab(senior_tokenizer, junior_tokenizer) -> None:
    """Raise unless both tokenizers map the same strings to the same ids."""
    if senior_tokenizer is junior_tokenizer:
        return
    a, b = senior_tokenizer.get_vocab(), junior_tokenizer.get_vocab()
    if a == b:
        return
    differ = sorted(set(a.items()) ^ set(b.items()), key=lambda kv: kv[1])[:3]
    raise TandemError(
        f"senior and junior vocabularies differ ({len(a)} vs {len(b)} ids; e.g. {differ}); "
        "the junior must use the senior's tokenizer (in the paper it is the senior's pre-RL base)"
    )


def check_same_model_vocab(senior, junior) -> None:
    """Raise unless both models emit logits over the same number of ids."""
    n_s, n_j = senior.get_output_embeddings().out_features, junior.get_output_embeddings().out_features
    if n_s != n_j:
        raise TandemError(
            f"senior emits {n_s} logits per token but junior {n_j}; pair models of one vocabulary "
            "(the junior is normally the senior's pre-RL base)"
        )


def context_length(model) -> int:
    return int(getattr(model.config, "max_position_embeddings", 1 << 30))
