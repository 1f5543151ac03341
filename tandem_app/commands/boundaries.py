"""`tandem-rlvr boundaries`: derive a tokenizer's word / sentence / step boundary ids."""

from __future__ import annotations

from pathlib import Path


def register(sub) -> None:
    p = sub.add_parser(
        "boundaries",
        help="count (and optionally save) the boundary token ids of a tokenizer",
        description="Derive the boundary set a selection strategy uses from a tokenizer's vocabulary "
        "(see model_spec/SPEC.md for the exact rules). Prints the count on the last line.",
    )
    p.add_argument("--tokenizer", required=True, help="tokenizer directory (or hub name)")
    p.add_argument("--strategy", required=True, choices=["word", "sentence", "step"], help="which boundary set")
    p.add_argument("--out", type=Path, help="write the sorted id list as JSON here (usable as boundary_token_ids)")
    p.set_defaults(func=run)


def run(args) -> int:
    from tandem.process.boundaries import boundary_ids, word_marker
    from tandem.io.jsonl import write_json
    from tandem.models.loading import load_tokenizer
    from tandem.io.run_lock import check_out_file

    if args.out:
        check_out_file(args.out)  # before the tokenizer is read, not an OSError after
    tok = load_tokenizer(args.tokenizer)
    ids = boundary_ids(tok, args.strategy)
    if args.strategy == "word":
        print(f"word-start marker: {word_marker(tok)!r}")
    if args.out:
        write_json(args.out, ids)
        print(f"wrote {len(ids)} ids to {args.out}")
    print(len(ids))
    return 0
