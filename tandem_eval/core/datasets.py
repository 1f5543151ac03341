"""Benchmarks: loaders for JSONL, parquet and Hugging Face datasets, and the paper's presets.

Every loader returns `Problem(id, problem, answer, source, benchmark)` rows. A `FieldMap`
says which columns hold the problem, the answer and the id.

A *benchmark* is what pass@k is reported on. It is one of
- a preset (`aime2024` ... `gsm8k`, see `PRESETS`) or a paper grouping (`aime_24_26`,
  `amc_23_25`, `minerva`; see `GROUPS`), whose problems are pooled;
- a path to a `.jsonl` / `.parquet` file (named after its stem);
- `hf:owner/name[:split]` (named `owner/name`), read with the `datasets` library.

Presets resolve to `<data dir>/<file>` when that file exists, else to their Hugging Face
copy. The data dir is `--data-dir`, else `$TANDEM_DATA_DIR`, else `../shared/data` next to
the repository. Local files use the row format `{"id", "problem", "answer", "source"}`.

AMC 2023-2025 (`amc_23_25`) is the paper's 121-problem set: all 40 of AMC 2023, and of the
2024 / 2025 files only the rows mirrored from the HF sets the paper used, minus five rows
dropped there for their answer form (`PAPER_AMC_EXCLUDED`); this needs the local files.
Four AMC 2024 answers in the sources are wrong (verified by exhaustive computation); by
default (`errata="fixed"`) they are corrected, `errata="source"` keeps them as published
(what the paper scored against). 2025-amc12a-25 keeps its official answer 8 either way: the
problem as worded has 13, but 8 answers the MAA's revised wording.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from pathlib import Path

from tandem.errors import TandemError
from tandem.grading.gold import check_gold
from tandem.io.jsonl import read_jsonl

DATA_DIR_ENV = "TANDEM_DATA_DIR"
FETCH = "python scripts/fetch_shared_data.py [--out DIR]"  # how a user gets the benchmark files
ERRATA_MODES = ("fixed", "source")


@dataclass(frozen=True)
class FieldMap:
    """Which columns of a row hold the problem, the answer and the id (None = row index)."""

    problem: str = "problem"
    answer: str = "answer"
    id: str | None = "id"
    answer_after: str | None = None  # keep only the text after this marker (GSM8K's "####")

    @classmethod
    def parse(cls, spec: str | None) -> FieldMap:
        """`problem=question,answer=solution,id=idx` -> FieldMap (unnamed keys keep defaults)."""
        if not spec:
            return cls()
        kwargs = {}
        for part in spec.split(","):
            key, sep, value = part.partition("=")
            key, value = key.strip(), value.strip()
            if not sep or key not in ("problem", "answer", "id", "answer_after") or not value:
                raise TandemError(f"bad --fields entry {part!r}; write e.g. problem=question,answer=answer,id=idx")
            kwargs[key] = value
        return cls(**kwargs)


@dataclass(frozen=True)
class Problem:
    id: str
    problem: str
    answer: str
    source: str  # where the row came from (e.g. "amc2024")
    benchmark: str  # what pass@k is reported on (e.g. "amc_23_25")


@dataclass(frozen=True)
class HubSource:
    path: str
    split: str
    config: str | None = None
    fields: FieldMap = FieldMap()


@dataclass(frozen=True)
class Preset:
    name: str
    file: str  # file name inside the data dir
    hub: HubSource
    rows: int | None = None  # expected row count of the local file (a sanity check)


# Hub copies for users with internet. Their column names come from the dataset cards;
# they were not downloaded here (no network), so they are the least tested path.
PRESETS: dict[str, Preset] = {
    p.name: p
    for p in [
        Preset("aime2024", "aime2024.jsonl", HubSource("HuggingFaceH4/aime_2024", "train"), 30),
        Preset("aime2025", "aime2025.jsonl", HubSource("MathArena/aime_2025", "train", fields=FieldMap(id="problem_idx")), 30),
        Preset("aime2026", "aime2026.jsonl", HubSource("MathArena/aime_2026", "train", fields=FieldMap(id="problem_idx")), 30),
        Preset("amc2023", "amc2023.jsonl", HubSource("math-ai/amc23", "test", fields=FieldMap(problem="question", id=None)), 40),
        Preset("amc2024", "amc2024.jsonl", HubSource("rawsh/2024_AMC12", "train", fields=FieldMap(id=None)), 48),
        Preset("amc2025", "amc2025.jsonl", HubSource("sonthenguyen/amc12-2025-non-figure", "train", fields=FieldMap(id=None)), 49),
        Preset("minerva_math", "minerva_math.jsonl", HubSource("math-ai/minervamath", "test", fields=FieldMap(problem="question", id=None)), 272),
        Preset("math500", "math500.jsonl", HubSource("HuggingFaceH4/MATH-500", "test", fields=FieldMap(id="unique_id")), 500),
        Preset("gsm8k", "gsm8k_test.jsonl", HubSource("openai/gsm8k", "test", "main", FieldMap(problem="question", id=None, answer_after="####")), 1319),
    ]
}

# Rows of the local AMC 2024 / 2025 files that are not in the paper's 121-problem set:
# the AoPS re-imports (figure problems), and rows the paper dropped for their answer form.
PAPER_AMC_EXCLUDED = frozenset({
    "2024-amc12a-14", "2024-amc12a-20", "2024-amc12b-07", "2024-amc12b-19",  # AoPS re-imports
    "2024-amc12a-10", "2024-amc12a-13", "2024-amc12b-04",  # answer form (expression, interval, letter)
    "2025-amc12a-10", "2025-amc12a-14", "2025-amc12a-20", "2025-amc12a-24",  # AoPS re-imports
    "2025-amc12b-12", "2025-amc12b-13", "2025-amc12b-15",
    "2025-amc12a-01", "2025-amc12a-19",  # answer form (a time, a letter)
})

# id -> (answer as published, correct answer); see ../shared/data/SOURCES.md.
AMC_ERRATA: dict[str, tuple[str, str]] = {
    "2024-amc12b-14": ("5", "2"),
    "2024-amc12b-15": ("\\log_2 \\frac{7}{\\sqrt{3}}", "\\log_2 \\frac{3}{\\sqrt{7}}"),
    "2024-amc12b-18": ("320", "319"),
    "2024-amc12b-25": ("247", "243"),
}


@dataclass(frozen=True)
class Part:
    preset: str
    exclude: frozenset[str] = frozenset()


GROUPS: dict[str, tuple[Part, ...]] = {
    "aime_24_26": (Part("aime2024"), Part("aime2025"), Part("aime2026")),
    "amc_23_25": (Part("amc2023"), Part("amc2024", PAPER_AMC_EXCLUDED), Part("amc2025", PAPER_AMC_EXCLUDED)),
    "minerva": (Part("minerva_math"),),
}
PAPER_BENCHMARKS = ("aime_24_26", "amc_23_25", "minerva")


def default_data_dir() -> Path:
    return Path(__file__).resolve().parents[2].parent / "shared" / "data"


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """--data-dir, else $TANDEM_DATA_DIR, else ../shared/data beside the repository."""
    if data_dir:
        return Path(data_dir)
    if os.environ.get(DATA_DIR_ENV):
        return Path(os.environ[DATA_DIR_ENV])
    return default_data_dir()


def _gold(row: dict, fields: FieldMap, at: str) -> str:
    """The row's gold answer; one that can never be graded correct (null, NaN, empty, a list, ...)
    is refused here, before any generation (`tandem.grading.gold`)."""
    answer = check_gold(row[fields.answer], at)
    if fields.answer_after is not None:
        answer = check_gold(answer.split(fields.answer_after)[-1], at)
    return answer


def _jsonl_lines(path: Path) -> list[int]:
    """The line number of each row `read_jsonl` returns (it skips blank lines)."""
    with path.open(encoding="utf-8") as f:
        return [n for n, line in enumerate(f, 1) if line.strip()]


def _rows_to_problems(rows, fields: FieldMap, where: str, source: str, benchmark: str,
                      lines: list[int] | None = None) -> list[Problem]:
    out = []
    for i, row in enumerate(rows):
        missing = [k for k in (fields.problem, fields.answer, fields.id) if k is not None and k not in row]
        if missing:
            raise TandemError(
                f"{where}: row {i} lacks column(s) {missing} (it has {sorted(row)}); "
                "map the columns with --fields problem=...,answer=...,id=..."
            )
        answer = _gold(row, fields, f"{where}:{lines[i]}" if lines else f"{where}: row {i}")
        pid = str(row[fields.id]) if fields.id is not None else f"{source}-{i}"
        out.append(Problem(pid, str(row[fields.problem]), answer, str(row.get("source", source)), benchmark))
    if not out:
        raise TandemError(f"{where}: no rows; point at a file with at least one problem")
    _check_unique_ids(out, where, lines)
    return out


def _check_unique_ids(problems: list[Problem], where: str, lines: list[int] | None) -> None:
    """One line naming the first repeated id and both of its rows (file lines where known)."""
    first: dict[str, int] = {}
    for i, p in enumerate(problems):
        if p.id in first:
            a, b = (f"line {lines[k]}" if lines else f"row {k}" for k in (first[p.id], i))
            raise TandemError(f"{where}: duplicate id {p.id!r} at {a} and {b}; give every row a unique id")
        first[p.id] = i


def load_file(path: str | os.PathLike, fields: FieldMap = FieldMap(), benchmark: str | None = None) -> list[Problem]:
    """Problems from a `.jsonl` or `.parquet` file."""
    path = Path(path)
    name = benchmark or path.stem
    lines = None
    if path.suffix == ".jsonl":
        rows = read_jsonl(path)
        lines = _jsonl_lines(path)
    elif path.suffix == ".parquet":
        if not path.is_file():
            raise TandemError(f"{path}: no such file; pass an existing parquet file")
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise TandemError("reading parquet needs pyarrow: pip install 'tandem-rlvr[eval]'") from None

        rows = pq.read_table(path).to_pylist()
    else:
        raise TandemError(f"{path}: unsupported file type {path.suffix!r}; use .jsonl or .parquet")
    return _rows_to_problems(rows, fields, str(path), source=path.stem, benchmark=name, lines=lines)


def load_hub(hub: HubSource, benchmark: str | None = None) -> list[Problem]:
    """Problems from a Hugging Face dataset (needs `pip install datasets` and network or a cache)."""
    try:
        import datasets
    except ImportError:
        raise TandemError(
            f"reading {hub.path} from the Hugging Face hub needs `pip install datasets`; "
            "or pass --data-dir with the local JSONL files"
        ) from None
    try:
        ds = datasets.load_dataset(hub.path, hub.config, split=hub.split)
    except Exception as e:  # noqa: BLE001 - network, auth, or a wrong name: one line for the user
        first = str(e).splitlines()[0] if str(e) else type(e).__name__
        raise TandemError(f"cannot load {hub.path} (split {hub.split}) from the hub: {first}; "
                          "check the name and your network, or pass --data-dir with local files") from None
    name = benchmark or hub.path
    return _rows_to_problems(ds, hub.fields, hub.path, source=hub.path.split("/")[-1], benchmark=name)


def _apply_errata(problems: list[Problem], errata: str) -> list[Problem]:
    if errata == "source":
        return problems
    out = []
    for p in problems:
        fix = AMC_ERRATA.get(p.id)
        out.append(replace(p, answer=fix[1]) if fix and p.answer == fix[0] else p)
    return out


def _load_part(part: Part, benchmark: str, data_dir: Path, allow_hub: bool) -> list[Problem]:
    preset = PRESETS[part.preset]
    local = data_dir / preset.file
    if local.is_file():
        problems = [replace(p, source=part.preset) for p in load_file(local, benchmark=benchmark)]
        if preset.rows is not None and len(problems) != preset.rows:
            raise TandemError(f"{local}: {len(problems)} rows, expected {preset.rows}; restore the original file")
        return [p for p in problems if p.id not in part.exclude]
    if not allow_hub:
        raise TandemError(
            f"{preset.file} not found in {data_dir}; fetch the benchmark files with `{FETCH}` and pass --data-dir DIR "
            f"(or set ${DATA_DIR_ENV}), or drop --offline to read the Hugging Face copy {preset.hub.path}"
        )
    return [replace(p, source=part.preset) for p in load_hub(preset.hub, benchmark)]


def benchmark_names() -> list[str]:
    return list(GROUPS) + list(PRESETS)


def check_benchmark_spec(spec: str) -> None:
    """Refuse a benchmark name that is no preset, group, file path or hub source: checked before any model or file."""
    spec = spec.strip()
    if spec.startswith("hf:") or spec.endswith((".jsonl", ".parquet")) or spec in GROUPS or spec in PRESETS:
        return
    raise TandemError(
        f"unknown benchmark {spec!r}; choose from {', '.join(benchmark_names())}, "
        "a .jsonl/.parquet path, or hf:owner/name[:split]"
    )


def load_benchmark(spec: str, data_dir: str | os.PathLike | None = None, fields: FieldMap | None = None,
                   errata: str = "fixed", allow_hub: bool = True) -> tuple[str, list[Problem]]:
    """(benchmark name, its problems) for a preset, a group, a file path or `hf:owner/name[:split]`."""
    if errata not in ERRATA_MODES:
        raise TandemError(f"unknown errata mode {errata!r}; choose one of {', '.join(ERRATA_MODES)}")
    spec = spec.strip()
    if spec.startswith("hf:"):
        path, _, split = spec[3:].partition(":")
        return path, load_hub(HubSource(path, split or "test", fields=fields or FieldMap()), path)
    if spec.endswith((".jsonl", ".parquet")):
        problems = load_file(spec, fields or FieldMap())
        return problems[0].benchmark, problems
    check_benchmark_spec(spec)
    parts = GROUPS.get(spec) or (Part(spec),)
    root = resolve_data_dir(data_dir)
    for part in parts:  # before any download: a subset defined by row ids needs the local file
        if part.exclude and not (root / PRESETS[part.preset].file).is_file():
            raise TandemError(
                f"{spec} needs the local file {PRESETS[part.preset].file} (its subset is defined by row ids); "
                f"it is not in {root}: fetch it with `{FETCH}` and pass --data-dir DIR (or set ${DATA_DIR_ENV})"
            )
    problems = [p for part in parts for p in _load_part(part, spec, root, allow_hub)]
    return spec, _apply_errata(problems, errata)


def load_benchmarks(specs: list[str], data_dir=None, fields: FieldMap | None = None, errata: str = "fixed",
                    allow_hub: bool = True, max_problems: int | None = None) -> dict[str, list[Problem]]:
    """{benchmark: problems}; `max_problems` keeps the first problems of each benchmark (for small runs)."""
    if not specs:
        raise TandemError("no benchmarks given; pass e.g. --benchmarks aime_24_26,amc_23_25,minerva")
    out: dict[str, list[Problem]] = {}
    for spec in specs:
        name, problems = load_benchmark(spec, data_dir, fields, errata, allow_hub)
        if name in out:
            raise TandemError(f"benchmark {name!r} given twice; list each once")
        _check_pooled_ids(name, problems)
        out[name] = problems[:max_problems] if max_problems else problems
    return out


def _check_pooled_ids(name: str, problems: list[Problem]) -> None:
    """A benchmark pooled from several files holds each id once; one line names the id and both sources."""
    seen: dict[str, str] = {}
    for p in problems:
        if p.id in seen:
            raise TandemError(f"benchmark {name!r} has the id {p.id!r} twice (in {seen[p.id]} and {p.source}); "
                              "give every row a unique id")
        seen[p.id] = p.source
