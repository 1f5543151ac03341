"""`scripts/hf_trl_tandem.py`, the TRL example, run as a user runs it: 2 steps on CPU, offline.

Public contract: DIR/metrics.jsonl, one line per step under the shared metric names (the
embedded trainer's), with at least `step`, `reward`, `senior_token_fraction` and
`mean_handoffs`; a log of an earlier version (`senior_fraction`, `num_handoffs`) reads back
through `tandem.io.metric_log.read_metrics` under the same names. `--base-steps 0` keeps the
default model path (the zoo's tiny model) but skips its SFT, so the run takes seconds. The settings
are `KEY=VALUE` overrides of `TrainConfig` (tests/test_hf_trl_settings.py checks the mapping onto TRL,
`tandem_app.train.hf_trl_settings`; the run is `tandem_app.train.hf_trl_run`).
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from tandem.io import legacy
from tandem.io.metric_log import MEAN_HANDOFFS, SENIOR_TOKEN_FRACTION, read_metrics

pytest.importorskip("trl")

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "hf_trl_tandem.py"
# TrainConfig keys, as `tandem-rlvr train` takes them (the script parses them with the CLI's own functions)
SMALL = ["steps=2", "prompts_per_step=2", "group_size=2", "sampling.max_new_tokens=24", "n_val_problems=4", "threads=1"]


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def run_in_process(argv: list[str]) -> int:
    main = runpy.run_path(str(SCRIPT))["main"]
    return main(argv)


def test_the_example_runs_two_tandem_steps_and_logs_the_senior_fraction(tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline"}
    proc = subprocess.run([sys.executable, str(SCRIPT), "--base-steps", "0", *SMALL, "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    metrics = rows(out / "metrics.jsonl")
    assert [m["step"] for m in metrics] == [1, 2]
    for m in metrics:
        assert 0.0 <= m["reward"] <= 1.0
        assert 0.0 < m[SENIOR_TOKEN_FRACTION] < 1.0  # co-written: both authors wrote tokens
        assert "loss" in m and MEAN_HANDOFFS in m and not any(k.startswith("tandem/") for k in m)
    assert 0.0 <= metrics[-1]["val_acc"] <= 1.0  # solo validation at the end
    assert SENIOR_TOKEN_FRACTION in proc.stdout and MEAN_HANDOFFS in proc.stdout  # the console line of every step
    assert [step for step, _ in read_metrics(out / "metrics.jsonl")] == [1, 2]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["method"] == "tandem" and summary["steps"] == 2 and 0.0 <= summary["val_acc_start"] <= 1.0
    assert summary["optimizer_steps"] == 4  # TrainConfig's ppo_mini_batches=2: 2 optimizer steps per step
    # the closing summary: the last step's reward and senior fraction, the final validation
    assert (summary["final_reward"], summary["senior_fraction"]) == (metrics[-1]["reward"],
                                                                     metrics[-1][SENIOR_TOKEN_FRACTION])
    assert summary["val_acc"] == metrics[-1]["val_acc"] and summary["wall_seconds"] > 0
    assert f"final reward {summary['final_reward']:.3f}" in proc.stdout.splitlines()[-1]
    assert not (out / "run.lock").exists()  # the folder's lock, released at the end


def test_the_grpo_baseline_and_a_local_dataset(tmp_path, tiny_dir):
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"What is {i} + {i}?", "answer": str(2 * i)}) + "\n"
                            for i in range(12)))
    out = tmp_path / "grpo"
    assert run_in_process(["--model", str(tiny_dir), "--dataset", str(data), "--method", "grpo", *SMALL,
                           "--out", str(out)]) == 0
    metrics = rows(out / "metrics.jsonl")
    assert [m["step"] for m in metrics] == [1, 2]
    assert all(m[SENIOR_TOKEN_FRACTION] == 1.0 for m in metrics)  # the senior alone


def test_a_metrics_log_of_an_earlier_version_reads_back_under_the_shared_names(tmp_path):
    old = {present: earlier for earlier, present in legacy.METRIC_NAMES.items()}
    path = tmp_path / "metrics.jsonl"
    path.write_text(json.dumps({"step": 1, "reward": 0.5, old[SENIOR_TOKEN_FRACTION]: 0.25,
                                old[MEAN_HANDOFFS]: 3.0}) + "\n")
    assert read_metrics(path) == [(1, {"reward": 0.5, SENIOR_TOKEN_FRACTION: 0.25, MEAN_HANDOFFS: 3.0})]


def test_a_dataset_without_prompt_and_answer_columns_is_refused(tmp_path, tiny_dir, capsys):
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"question": "1 + 1?", "answer": "2"}) + "\n")
    assert run_in_process(["--model", str(tiny_dir), "--dataset", str(data), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"error: dataset {str(data)!r} lacks column(s) prompt; it needs prompt and answer "
                   "(has question, answer)"]
