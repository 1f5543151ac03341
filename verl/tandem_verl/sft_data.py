"""Teacher traces as verl 0.9.1's SFT data: a traces JSONL in, the `messages` parquet its SFT trainer reads out.

Each trace line holds `prompt` (the question as the student's eval shows it) and `response`
(the teacher's raw trace). A row becomes one chat, user = prompt, assistant = response, so
the student is trained on the assistant turn only (verl's `MultiTurnSFTDataset` masks the
rest). verl measures a row as the whole chat through the tokenizer's template and raises
mid-run on one longer than `data.max_length`; so every row is measured here the same way
first, and the long ones are counted and then dropped, or left for verl to cut on the right
(`data.truncation=right`), with one line saying how many. Never silent.

    python -m tandem_verl.sft_data --traces T.jsonl --tokenizer DIR --out train.parquet --max-length L [--long cut]
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError

MESSAGES_KEY = "messages"  # verl's data.messages_key default
LONG_RULES = ("drop", "cut")  # what happens to a trace longer than max_length
TRUNCATION = {"drop": "error", "cut": "right"}  # verl's data.truncation for each rule


@dataclass(frozen=True)
class SftRows:
    rows: list[dict]  # {"messages": [...]} each
    total: int  # traces read
    long: int  # traces longer than max_length (dropped or cut)
    rule: str

    def note(self, max_length: int) -> str:
        """The one line on long traces."""
        if not self.long:
            return f"sft data: {self.total} traces, none longer than max_length {max_length} tokens"
        done = "dropped" if self.rule == "drop" else "cut on the right by verl (data.truncation=right)"
        return (f"sft data: {self.long} of {self.total} traces are longer than max_length {max_length} tokens: "
                f"{done}; raise --max-length or pass --long {'cut' if self.rule == 'drop' else 'drop'} to change it")


def read_traces(path: Path) -> list[tuple[str, str]]:
    """(prompt, response) per line; a line without both as text is one error naming path:line."""
    if not path.is_file():
        raise TandemError(f"{path}: no such traces file; pass --traces FILE.jsonl (fields prompt, response)")
    out = []
    with path.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise TandemError(f"{path}:{n}: not JSON ({e.msg}); one trace object per line") from None
            row = row if isinstance(row, dict) else {}
            prompt, response = row.get("prompt"), row.get("response")
            if not isinstance(prompt, str) or not prompt.strip() or not isinstance(response, str):
                raise TandemError(f"{path}:{n}: a trace needs text fields 'prompt' (the question) and 'response' "
                                  "(the teacher's trace)")
            out.append((prompt, response))
    if not out:
        raise TandemError(f"{path}: no traces; collect some first (tandem_eval.MATH.eval_solo on the train split)")
    return out


def chat(prompt: str, response: str) -> list[dict]:
    return [{"role": "user", "content": prompt}, {"role": "assistant", "content": response}]


def chat_length(tokenizer, messages: list[dict], template_kwargs: dict) -> int:
    """The row's length as verl's dataset checks it: the whole chat through the template, tokenized."""
    if not getattr(tokenizer, "chat_template", None):
        raise TandemError(f"{tokenizer.name_or_path}: the tokenizer has no chat template; verl's SFT data needs one")
    ids = tokenizer.apply_chat_template(messages, add_generation_prompt=False, tokenize=True, **template_kwargs)
    ids = ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids
    return len(ids)


def build_rows(tokenizer, traces: list[tuple[str, str]], max_length: int, rule: str = "drop",
               template_kwargs: dict | None = None) -> SftRows:
    """The SFT rows, each trace measured against `max_length` (see the module docstring)."""
    if rule not in LONG_RULES:
        raise TandemError(f"--long {rule!r}: choose drop or cut")
    if max_length < 2:
        raise TandemError(f"--max-length {max_length}: give the student's context in tokens (>= 2)")
    rows, long = [], 0
    for prompt, response in traces:
        messages = chat(prompt, response)
        if chat_length(tokenizer, messages, template_kwargs or {}) > max_length:
            long += 1
            if rule == "drop":
                continue
        rows.append({MESSAGES_KEY: messages})
    return SftRows(rows, len(traces), long, rule)


def require_rows(rows: SftRows, batch_size: int, max_length: int) -> None:
    """verl's loader drops the last partial batch: fewer rows than one batch would train zero steps."""
    if len(rows.rows) < batch_size:
        raise TandemError(f"sft data: {len(rows.rows)} usable traces of {rows.total} (max_length {max_length}) but "
                          f"--batch-size {batch_size}; collect more traces, lower --batch-size or raise --max-length")


def write_parquet(rows: list[dict], path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".parquet.tmp")
    pq.write_table(pa.Table.from_pylist(rows), tmp)
    tmp.replace(path)  # a rerun never reads a half-written file


def prepare(traces: Path, tokenizer_dir: str, out: Path, max_length: int, rule: str = "drop", batch_size: int = 1,
            template_kwargs: dict | None = None) -> SftRows:
    """Read, measure and write; returns the rows (their `note` is the one line to print)."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    rows = build_rows(tokenizer, read_traces(traces), max_length, rule, template_kwargs)
    require_rows(rows, batch_size, max_length)
    write_parquet(rows.rows, out)
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--traces", type=Path, required=True)
    ap.add_argument("--tokenizer", required=True, help="the student's model dir (its tokenizer and chat template)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--max-length", type=int, required=True)
    ap.add_argument("--long", choices=LONG_RULES, default="drop")
    ap.add_argument("--batch-size", type=int, default=1)
    args = ap.parse_args(argv)
    try:
        rows = prepare(args.traces, args.tokenizer, args.out, args.max_length, args.long, args.batch_size)
    except TandemError as e:
        raise SystemExit(f"error: {e}") from None
    print(rows.note(args.max_length))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
