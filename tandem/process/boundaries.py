"""Boundary sets: which token ids end a unit (word, sentence, reasoning step).

Derived once per tokenizer from its vocabulary and cached on the tokenizer object.
Special tokens are never boundaries.

- word: ids whose surface form begins with the tokenizer's word-start marker: `Ġ` for
  byte-level BPE (Qwen, GPT-2, Llama-3), `▁` for SentencePiece (Llama-2, Mistral). The
  marker is whichever of the two begins more vocabulary entries.
- sentence: ids whose decoded text, after dropping trailing whitespace, ends with `.`,
  `!` or `?` optionally followed by closing quotes or brackets (see `SENTENCE_END`).
- step: ids whose decoded text contains a blank line, `\\n\\n`.
"""

from __future__ import annotations

import re

import torch

from tandem.process import strategies
from tandem.errors import TandemError

WORD_MARKERS = ("\u0120", "\u2581")  # Ġ (byte-level BPE), ▁ (SentencePiece)
SENTENCE_END = re.compile(r"[.!?][\"'\u2019\u201d)\]}\u00bb]*\s*$")
STEP_MARK = "\n\n"
KINDS = ("word", "sentence", "step")  # every boundary_kind a strategy may name
_CACHE_ATTR = "_tandem_boundary_cache"


def special_ids(tokenizer) -> set[int]:
    """All special token ids, including added tokens flagged special."""
    ids = set(getattr(tokenizer, "all_special_ids", []) or [])
    for i, tok in (getattr(tokenizer, "added_tokens_decoder", None) or {}).items():
        if getattr(tok, "special", False):
            ids.add(int(i))
    return ids


def word_marker(tokenizer) -> str:
    """`Ġ` or `▁`, whichever begins more vocabulary entries; an error if neither appears."""
    vocab = tokenizer.get_vocab()
    counts = {m: sum(1 for t in vocab if t.startswith(m)) for m in WORD_MARKERS}
    marker = max(counts, key=counts.get)
    if counts[marker] == 0:
        raise TandemError(
            "this tokenizer marks no word starts with 'Ġ' or '▁'; pass boundary_token_ids explicitly "
            "(a JSON list of ids) for the word strategy"
        )
    return marker


def _decoded_vocab(tokenizer) -> list[str]:
    return tokenizer.batch_decode([[i] for i in range(len(tokenizer))], skip_special_tokens=False)


def derive_boundary_ids(tokenizer, kind: str) -> list[int]:
    """Compute the sorted boundary ids of `kind` for `tokenizer` (uncached)."""
    if kind not in KINDS:
        raise TandemError(f"unknown boundary kind {kind!r}; choose one of {', '.join(KINDS)}")
    special = special_ids(tokenizer)
    if kind == "word":
        marker = word_marker(tokenizer)
        ids = (i for t, i in tokenizer.get_vocab().items() if t.startswith(marker))
    elif kind == "sentence":
        ids = (i for i, s in enumerate(_decoded_vocab(tokenizer)) if s.strip() and SENTENCE_END.search(s))
    else:
        ids = (i for i, s in enumerate(_decoded_vocab(tokenizer)) if STEP_MARK in s)
    return sorted(i for i in ids if i not in special)


def boundary_ids(tokenizer, kind: str) -> list[int]:
    """Boundary ids of `kind`, derived once per tokenizer object and cached on it."""
    cache = getattr(tokenizer, _CACHE_ATTR, None)
    if cache is None:
        cache = {}
        try:
            setattr(tokenizer, _CACHE_ATTR, cache)
        except AttributeError:  # objects without __dict__: no caching, still correct
            pass
    if kind not in cache:
        cache[kind] = derive_boundary_ids(tokenizer, kind)
    return cache[kind]


def strategy_boundary_kind(strategy: str) -> str | None:
    """The boundary set a selection strategy reads, or None (its registry entry)."""
    return strategies.strategy(strategy).boundary_kind


def boundary_lookup(ids, vocab_size: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """A BoolTensor[vocab_size] that is True at boundary ids (for vectorised `advance`)."""
    lookup = torch.zeros(vocab_size, dtype=torch.bool, device=device)
    ids = [i for i in ids if i < vocab_size]
    if ids:
        lookup[torch.tensor(ids, dtype=torch.long, device=device)] = True
    return lookup


def lookup_size(vocab_size: int | None, tokenizer=None) -> int:
    """How many ids a boundary lookup covers, one rule for every backend: each id the model can
    emit (`vocab_size`, its logits' width, where the backend knows it) and each id the
    tokenizer knows, whichever is larger (a padded vocabulary is wider than its tokenizer)."""
    sizes = [vocab_size or 0]
    if tokenizer is not None:
        sizes += [len(tokenizer), int(getattr(tokenizer, "vocab_size", 0) or 0)]
    if max(sizes) <= 0:
        raise TandemError("a boundary lookup needs the model's vocabulary size or its tokenizer")
    return max(sizes)


def config_boundary_lookup(cfg, tokenizer, vocab_size: int | None, device="cpu") -> torch.Tensor | None:
    """The lookup a `TandemConfig` needs: explicit ids if given, else derived; None if unused.

    Every backend builds its lookup here; its size is `lookup_size(vocab_size, tokenizer)`.
    """
    kind = strategy_boundary_kind(cfg.selection_strategy)
    if kind is None:
        return None
    ids = cfg.explicit_boundary_ids()
    if ids is None:
        if tokenizer is None:
            raise TandemError(f"strategy {cfg.selection_strategy!r} needs a tokenizer or boundary_token_ids")
        ids = boundary_ids(tokenizer, kind)
    if not ids:
        raise TandemError(
            f"the {kind} boundary set is empty for this tokenizer; strategy {cfg.selection_strategy!r} "
            "would never switch authors — pass boundary_token_ids or choose another strategy"
        )
    return boundary_lookup(ids, lookup_size(vocab_size, tokenizer), device)
