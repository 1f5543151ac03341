"""`tandem-rlvr build-tiny`: write a tiny Qwen3-config model + tokenizer, offline."""

from __future__ import annotations

from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser(
        "build-tiny",
        help="build a tiny Qwen3-config model and its tokenizer locally (no download)",
        description="Train a byte-level BPE tokenizer on the synthetic task's text and write it with a "
        "randomly initialised ~0.85M-parameter Qwen3 model as a Hugging Face directory. All seeds share "
        "one tokenizer, so any two zoo models can be paired as senior and junior.",
    )
    p.add_argument("--out", required=True, type=Path, help="new (or empty) directory to write the model into")
    p.add_argument("--seed", type=int, default=0, help="seed of the model's random initialisation (default 0)")
    p.set_defaults(func=run)


def run(args) -> int:
    from tandem_app.zoo import build_tiny

    out = build_tiny(args.out, seed=args.seed)
    print(f"wrote tiny model and tokenizer to {out}")
    return 0
