"""The real benchmark and tokenizer files the tests read, one idea per module (the command is
`python scripts/fetch_shared_data.py`).

    basics      the committed sums, the default data dir, sha256, the two errors
    sources     every source's URL, pinned to a commit or a package version
    transforms  the pure steps the builders share: rows, JSONL bytes, answers and ids
    builders    one builder per file: source bytes in, file bytes out
    targets     what to build: every file, its sources, its builder
    fetch       download, build, check against the sum, write atomically; a resumable run
    cli         the flags and main()

Loaded by path as a package (scripts/fetch_shared_data.py), so its modules import one another
relatively. Standard library only; pyarrow is imported only for the two parquet sources.
"""
