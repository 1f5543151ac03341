"""Loading models and tokenizers, and refusing senior/junior pairs that cannot co-write.

A senior and a junior co-write one token sequence, so they must share one vocabulary:
the same token strings at the same ids. `check_same_vocab` fails closed otherwise.
torch and transformers are imported by the loaders, so a command can check its paths
(`check_model_path`) before it pays for them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tandem.errors import TandemError

if TYPE_CHECKING:
    import torch

DTYPES = ("float32", "float64", "bfloat16", "float16")  # torch's names


def resolve_dtype(dtype) -> torch.dtype:
    import torch

    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype not in DTYPES:
        raise TandemError(f"unknown dtype {dtype!r}; choose one of {', '.join(DTYPES)}")
    return getattr(torch, dtype)


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")


def check_model_path(path: str | Path, wanted=("config.json",), what="model") -> None:
    """Refuse a local path that is missing or cannot hold a model/tokenizer (hub names pass through).

    A path is local when it exists, is absolute or relative (./, ../), has more than one
    slash, or its parent folder exists here (`run1/model` beside a `run1` run folder).
    """
    p = Path(path)
    looks_local = (p.is_absolute() or str(path).startswith(".") or p.exists() or str(path).count("/") > 1
                   or (str(p.parent) != "." and p.parent.is_dir()))
    if looks_local and not p.exists():
        raise TandemError(f"{what} directory {path} is missing (no such file or directory); pass an existing "
                          "directory or a Hugging Face hub name")
    if looks_local and not any((p / f).is_file() for f in wanted):
        inside = p / "model"  # a run folder (sft, train, distill's student, the demo's phases) keeps its model there
        hint = (f"; it looks like a run folder: pass {inside}" if any((inside / f).is_file() for f in wanted)
                else "")
        raise TandemError(f"{path}: not a Hugging Face {what} directory (none of {', '.join(wanted)} found "
                          f"there){hint}")


def _as_hub_name(path) -> str:
    """How a path that is no local directory was read, for a load error."""
    return "" if Path(path).exists() else " (no such directory here, so it was read as a Hugging Face hub name)"


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
    check_model_path(path, TOKENIZER_FILES, "tokenizer")
    from transformers import AutoTokenizer, GPT2TokenizerFast

    try:
        if _bare_bpe_dir(path):  # AutoTokenizer cannot tell the class without a config
            return GPT2TokenizerFast.from_pretrained(str(path))
        return AutoTokenizer.from_pretrained(str(path))
    except Exception as e:  # transformers raises OSError, ValueError, KeyError, ... for unreadable directories
        raise TandemError(f"cannot load a tokenizer from {path}{_as_hub_name(path)}: {_first_line(e)}") from None


def load_model(path: str | Path, dtype="float32", device: str | torch.device = "cpu"):
    """An HF causal LM in eval mode, with gradients off (the engine never trains)."""
    check_model_path(path)
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # per-shard bars drown our own progress and error lines
    try:
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype=resolve_dtype(dtype))
    except Exception as e:  # transformers raises OSError, ValueError, KeyError, ... for unreadable checkpoints
        raise TandemError(f"cannot load a model from {path}{_as_hub_name(path)}: {_first_line(e)}") from None
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


def embedding_rows(model: str | Path, what: str = "model") -> int:
    """The rows of `model`'s token embedding: `vocab_size` of its config, read without loading the weights,
    so a pair that cannot share tokens is refused before any model loads or any file is written."""
    from transformers import AutoConfig

    check_model_path(model, what=what)
    try:
        config = AutoConfig.from_pretrained(model)
    except Exception as e:  # transformers raises OSError, ValueError, KeyError, ... for an unreadable config
        raise TandemError(f"cannot read the config of {what} {model}{_as_hub_name(model)}: {_first_line(e)}") from None
    value = getattr(config.get_text_config(), "vocab_size", None)
    if not isinstance(value, int) or value < 1:
        raise TandemError(f"{what} {model}: its config names no vocab_size, so its embedding cannot be checked "
                          "against the tokenizer; set it in config.json")
    return value


def check_tokenizer_rows(model: str | Path, tokenizer, what: str = "model") -> int:
    """`model`'s embedding rows, which must hold every id its `tokenizer` writes (else an IndexError in the
    first forward pass that meets a high id, long after the run began)."""
    rows = embedding_rows(model, what)
    if len(tokenizer) > rows:
        raise TandemError(f"{what} {model}: its tokenizer has {len(tokenizer)} ids but its embedding only {rows} "
                          "rows; use the tokenizer the model was trained with")
    return rows


def check_partner_rows(senior_rows: int, junior_rows: int, junior: str) -> None:
    """Senior and junior of one vocabulary have one embedding size: each reads every token the other writes
    (else an IndexError mid-generation). `junior` names the junior as its user gave it (flag or key, and path)."""
    if senior_rows != junior_rows:
        raise TandemError(f"{junior} has {junior_rows} embedding rows but the senior {senior_rows}: each reads the "
                          "tokens the other writes; use a junior with the senior's embedding size")


def load_receiver(path: str, tokenizer, senior_rows: int, device="cpu", dtype="float32"):
    """`partner_reward.transfer.receiver` (RLTR's receiver), frozen; one line, before any step, for another
    vocabulary. The prefix is handed over as token ids, so the receiver must read the senior's tokens.
    Every trainer that runs the transfer reward loads it here (the embedded trainer, HF TRL)."""
    what = f"partner_reward.transfer.receiver {path}"
    try:
        check_same_vocab(tokenizer, load_tokenizer(path))
    except TandemError as e:
        raise TandemError(f"{what}: {e}") from None
    receiver = load_model(path, dtype=dtype, device=device)
    check_partner_rows(senior_rows, receiver.get_input_embeddings().num_embeddings, what)
    return receiver.eval().requires_grad_(False)


def context_length(model) -> int:
    return int(getattr(model.config, "max_position_embeddings", 1 << 30))
