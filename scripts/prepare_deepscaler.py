"""Write the parquet files the verl launchers read: DeepScaleR for training, AMC / AIME / Minerva for validation.

    python scripts/prepare_deepscaler.py --out ~/data/tandem
    python scripts/prepare_deepscaler.py --out ~/data/tandem --train ../shared/data/deepscaler_train_partial.jsonl
    python scripts/prepare_deepscaler.py --out DIR --train task_train.jsonl --val task_test.jsonl --instruction ""

Output (the layout `verl/deepscaler_common.sh` expects under $DATA_DIR):
    deepscaler/train.parquet   deepscaler/heldout.parquet
    amc_23_25/test.parquet   aime_24_26/test.parquet   minerva/test.parquet

The held-out split is the release's (`data/build_deepscaler.py` of CSSLab/Tandem-RLVR):
1,000 rows drawn as pandas' `DataFrame.sample(n=1000, random_state=0)` draws them (seed 0
seeds a numpy `RandomState`, whose `choice(rows, 1000, replace=False)` is the first 1,000
of a permutation), written to `deepscaler/heldout.parquet` in that drawn order; training
keeps the other rows in their file order. The release's newest launchers validate on this
slice so that no reported benchmark takes part in choosing the checkpoint (`VAL_SET=heldout`
in `verl/deepscaler_common.sh`; the default validates on AMC / AIME / Minerva, as the
older launchers behind the paper's pass@4 rule did). `--heldout 0` turns it off
(every row trains); `--max-train` truncates the training rows after the split.

Each row follows verl's RL parquet schema (as in verl's examples/data_preprocess/gsm8k.py):
    data_source   the benchmark name (verl groups validation metrics by it)
    prompt        chat messages: one user turn, the problem + the eval suite's instruction
    ability       "math"
    reward_model  {"style": "rule", "ground_truth": <answer string>}
    extra_info    {"split", "index", "id", "source"}, plus "solution" on training and held-out rows
The training rows carry the source's worked solution (DeepScaleR's `solution` column) in
`extra_info.solution`: `partner_reward.target=solution` scores it and
`partner_reward.writer_sees_solution=true` shows it to the writer (SPEC §13). A row the source
gives no solution keeps `solution: null`, is counted and reported in one line, and trains
verifier-only runs; those two settings refuse it.
The instruction and the validation sets (the paper's 121-problem AMC set, AIME 2024-2026,
Minerva) come from `tandem_eval`, so training-time validation scores the same problems,
with the same prompt, as the evaluation suite.

--train takes the Hugging Face dataset `agentica-org/DeepScaleR-Preview-Dataset` (default;
needs network or a cache) or a local .jsonl/.parquet with `problem` and `answer` columns.
--val replaces the three validation sets by other benchmarks (any `tandem_eval` spec,
e.g. a local .jsonl), each written to `<benchmark>/test.parquet`. --instruction replaces
the instruction appended to every problem (`--preset paper`: the release's, which its runs
trained with, appended without a separator); "" leaves the bare problem (the scale smoke
run's tiny base was SFT'd on bare problems, `tandem_app.train.tiny_base`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tandem.errors import TandemError

DEEPSCALER_HF = "agentica-org/DeepScaleR-Preview-Dataset"
TRAIN_SOURCE = "deepscaler"
HELDOUT_ROWS = 1000  # the release's held-out slice of DeepScaleR's 40,309 rows
HELDOUT_SEED = 0
VAL_BENCHMARKS = ("amc_23_25", "aime_24_26", "minerva")


SOLUTION_COLUMN = "solution"  # DeepScaleR-Preview's worked-solution column


def verl_row(problem, split: str, index: int, data_source: str, instruction: str | None = None,
             preset: str = "ours", solution: str | None | bool = False) -> dict:
    """One problem (`tandem_eval.core.datasets.Problem`) as a verl RL parquet row, prompted as the eval `preset` does.

    `solution`: the row's worked solution for `extra_info.solution` (None = the source has none);
    False leaves the key out (validation rows).
    """
    from tandem_eval.core.presets import get_preset
    from tandem_eval.core.prompts import user_message

    if not str(problem.answer).strip():
        raise TandemError(f"{problem.source}/{problem.id}: empty answer; a row without ground truth cannot be graded")
    rules = get_preset(preset)
    text = user_message(problem.problem, rules.instruction if instruction is None else instruction,
                        rules.instruction_separator)
    return {
        "data_source": data_source,
        "prompt": [{"role": "user", "content": text}],
        "ability": "math",
        "reward_model": {"style": "rule", "ground_truth": str(problem.answer)},
        "extra_info": {"split": split, "index": index, "id": str(problem.id), "source": problem.source,
                       **({} if solution is False else {SOLUTION_COLUMN: solution})},
    }


def load_train(spec: str) -> list:
    """DeepScaleR problems from the Hugging Face hub (the default) or a local file."""
    from tandem_eval.core.datasets import FieldMap, HubSource, load_file, load_hub

    if spec.endswith((".jsonl", ".parquet")):
        problems = load_file(spec)
    else:
        problems = load_hub(HubSource(spec, "train", fields=FieldMap(id=None)), TRAIN_SOURCE)
    return problems


def load_solutions(spec: str, rows: int) -> list[str | None]:
    """Each training row's worked solution (None where the source has none), in `load_train`'s order."""
    if spec.endswith(".parquet"):
        import pyarrow.parquet as pq

        table = pq.read_table(spec)
        values = table.column(SOLUTION_COLUMN).to_pylist() if SOLUTION_COLUMN in table.column_names else []
    elif spec.endswith(".jsonl"):
        from tandem.io.jsonl import read_jsonl

        values = [row.get(SOLUTION_COLUMN) for row in read_jsonl(spec)]
    else:
        import datasets

        table = datasets.load_dataset(spec, split="train")  # cached by load_train's read
        values = table[SOLUTION_COLUMN] if SOLUTION_COLUMN in table.column_names else []
    if values and len(values) != rows:
        raise TandemError(f"{spec}: {len(values)} solutions for {rows} problems; the file changed while read, rerun")
    out = [v if isinstance(v, str) and v.strip() else None for v in values]
    return out or [None] * rows


def solution_note(spec: str, solutions: list[str | None]) -> str:
    """The one line that says how many training rows lack a worked solution."""
    missing = sum(s is None for s in solutions)
    if not missing:
        return f"{spec}: every row has a worked solution (extra_info.solution)"
    return (f"{spec}: {missing} of {len(solutions)} rows have no worked solution (extra_info.solution is null); "
            "verifier-only runs train on them, partner_reward.target=solution and writer_sees_solution refuse them")


def heldout_positions(num_rows: int, heldout: int, seed: int = HELDOUT_SEED) -> list[int]:
    """Row positions `DataFrame.sample(n=heldout, random_state=seed)` picks, in its order.

    pandas turns an int seed into `np.random.RandomState(seed)` and samples without
    replacement with `choice(num_rows, size=heldout, replace=False)`; doing the same
    here keeps the split without a pandas import (tests check it against pandas).
    """
    import numpy as np

    if heldout < 0:
        raise TandemError(f"--heldout must be >= 0, got {heldout}")
    if heldout >= num_rows:
        raise TandemError(f"--heldout {heldout} leaves no training rows out of {num_rows}; "
                          "pass a smaller --heldout, or --heldout 0 to train on every row")
    return [int(i) for i in np.random.RandomState(seed).choice(num_rows, size=heldout, replace=False)]


def split_heldout(problems: list, heldout: int, seed: int = HELDOUT_SEED) -> tuple[list, list]:
    """(training rows in file order, held-out rows in drawn order), each as (original index, problem)."""
    picked = heldout_positions(len(problems), heldout, seed) if heldout else []
    chosen = set(picked)
    train = [(i, p) for i, p in enumerate(problems) if i not in chosen]
    return train, [(i, problems[i]) for i in picked]


def write_parquet(rows: list[dict], path: Path) -> None:
    import datasets

    if not rows:
        raise TandemError(f"refusing to write an empty {path}")
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows).to_parquet(str(path))


def prepare(out: Path, train: str, data_dir: str | None, max_train: int | None = None,
            val: tuple[str, ...] = VAL_BENCHMARKS, instruction: str | None = None,
            max_val: int | None = None, heldout: int = HELDOUT_ROWS,
            seed: int = HELDOUT_SEED, preset: str = "ours", report=print) -> dict[str, int]:
    """Write the training file, the held-out file and one file per validation benchmark; returns {relative path: rows}.

    `extra_info.index` is a row's position in the full training source, in both files.
    `report` gets the one line on rows without a worked solution (`solution_note`).
    """
    from tandem_eval.core.datasets import load_benchmark

    if max_train is not None and max_train < 1:
        raise TandemError(f"--max-train must be >= 1, got {max_train}")
    problems = load_train(train)
    solutions = load_solutions(train, len(problems))
    train_part, held_part = split_heldout(problems, heldout, seed)
    train_rows = [verl_row(p, "train", i, TRAIN_SOURCE, instruction, preset, solutions[i])
                  for i, p in train_part[:max_train]]
    held_rows = [verl_row(p, "heldout", i, TRAIN_SOURCE, instruction, preset, solutions[i]) for i, p in held_part]
    report(solution_note(train, [r["extra_info"][SOLUTION_COLUMN] for r in train_rows + held_rows]))
    written = {}
    write_parquet(train_rows, out / "deepscaler" / "train.parquet")
    written["deepscaler/train.parquet"] = len(train_rows)
    held_path = out / "deepscaler" / "heldout.parquet"
    if held_rows:
        write_parquet(held_rows, held_path)
        written["deepscaler/heldout.parquet"] = len(held_rows)
    elif held_path.exists():
        held_path.unlink()  # a stale slice from an earlier run would overlap this training file
    for spec in val:
        name, problems = load_benchmark(spec, data_dir=data_dir)
        name = Path(name).stem if spec.endswith((".jsonl", ".parquet")) and "/" in name else name
        rows = [verl_row(p, "test", i, name, instruction, preset) for i, p in enumerate(problems[:max_val])]
        write_parquet(rows, out / name / "test.parquet")
        written[f"{name}/test.parquet"] = len(rows)
    return written


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path, help="output directory ($DATA_DIR of the launchers)")
    ap.add_argument("--train", default=DEEPSCALER_HF, help="HF dataset name or a local .jsonl/.parquet")
    ap.add_argument("--data-dir", default=None, help="where the eval JSONL files live (tandem_eval's data dir)")
    ap.add_argument("--max-train", type=int, default=None,
                    help="keep only the first N training problems (after the held-out rows are removed)")
    ap.add_argument("--heldout", type=int, default=HELDOUT_ROWS,
                    help="rows held out of training into deepscaler/heldout.parquet, drawn as pandas' "
                         "sample(n, random_state=--heldout-seed) draws them; 0 = no split (default: %(default)s, "
                         "the release's)")
    ap.add_argument("--heldout-seed", type=int, default=HELDOUT_SEED,
                    help="seed of the held-out draw (default: %(default)s, the release's)")
    ap.add_argument("--val", nargs="+", default=list(VAL_BENCHMARKS), metavar="SPEC",
                    help="validation benchmarks: tandem_eval names or local .jsonl/.parquet files "
                         "(default: %(default)s)")
    ap.add_argument("--max-val", type=int, default=None, help="keep only the first N problems of each validation set")
    ap.add_argument("--preset", choices=("ours", "paper"), default="ours",
                    help="the eval preset whose prompt every row gets (tandem_eval.core.presets): ours, or paper (the "
                         "release's instruction, which its runs trained and evaluated with) (default: %(default)s)")
    ap.add_argument("--instruction", default=None,
                    help='instruction appended to every problem (default: the --preset\'s); "" = bare problem')
    args = ap.parse_args(argv)
    try:
        written = prepare(args.out.expanduser(), args.train, args.data_dir, args.max_train, tuple(args.val),
                          args.instruction, args.max_val, args.heldout, args.heldout_seed, args.preset)
    except TandemError as e:
        raise SystemExit(f"error: {e}") from None
    for rel, n in written.items():
        print(f"{args.out / rel}: {n} rows")


if __name__ == "__main__":
    main()
