"""Every run can be evaluated the obvious way (issue 59, item 3).

The demo writes its test split as an eval benchmark; every model the embedded trainers save
records the prompt format it learnt (the bare problem), which the eval tools use when
`--instruction` is left out; each `save_every` also leaves a loadable `checkpoint-N/model`,
the newest `keep_checkpoints` of them. The demo-level checks read the session's one quick
demo (`quick_demo`); the rest use the session's tiny model and no training.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from tandem.errors import TandemError
from tandem_app.commands.cli import main
from tandem_app.experiments.demo import TEST_SPLIT, demo_config
from tandem_app.train.hf_checkpoints import hf_checkpoints, save_hf_checkpoint
from tandem_eval.core import flags
from tandem_eval.core.datasets import load_benchmark
from tandem_eval.core.prompts import PROMPT_FORMAT_NAME, recorded_instruction, write_prompt_format
from tandem_eval.core.run_config import EvalRun


# The demo's eval budget (README's line passes it too): the eval preset's 3,000 tokens exceed a tiny model's context.
BUDGET = str(demo_config(quick=True).eval.sampling.max_new_tokens)


def _summary(out_dir: Path) -> dict:
    return json.loads((out_dir / "summary.json").read_text())


def test_the_demo_writes_its_test_split_as_a_benchmark_the_eval_reads(quick_demo):
    name, problems = load_benchmark(str(quick_demo / TEST_SPLIT))
    assert len(problems) == demo_config(quick=True).eval.n_problems
    assert all(p.problem and p.answer for p in problems)


def test_every_model_the_demo_saves_records_the_bare_problem_as_its_prompt(quick_demo):
    for model in ("sft/model", "tandem/model", "grpo/model", "tandem/checkpoint-6/model"):
        assert recorded_instruction(quick_demo / model) == "", model


def test_save_every_leaves_the_newest_hf_checkpoints_loadable(quick_demo):
    from tandem.models.loading import load_model

    cfg = demo_config(quick=True)
    train_steps = [cfg.train.save_every * i for i in range(1, cfg.train.steps // cfg.train.save_every + 1)]
    sft_steps = [cfg.sft.save_every * i for i in range(1, cfg.sft.steps // cfg.sft.save_every + 1)]
    for method in ("tandem", "grpo"):
        assert [s for s, _ in hf_checkpoints(quick_demo / method)] == train_steps[-cfg.train.keep_checkpoints:]
    assert [s for s, _ in hf_checkpoints(quick_demo / "sft")] == sft_steps[-cfg.sft.keep_checkpoints:]
    assert not list(quick_demo.glob("*/checkpoint-*.tmp")) and not list(quick_demo.glob("*/checkpoint-*.old"))
    assert load_model(quick_demo / "tandem" / f"checkpoint-{train_steps[0]}" / "model") is not None


def test_eval_solo_with_defaults_asks_a_demo_model_as_it_was_trained(quick_demo, tmp_path):
    # Only the model and the test split: the instruction comes from the model's record.
    out = tmp_path / "solo"
    assert main(["eval-solo", "--model", str(quick_demo / "tandem" / "model"), "--benchmarks",
                 str(quick_demo / TEST_SPLIT), "--n", "1", "--max-problems", "16", "--max-new-tokens", BUDGET, "--out-dir", str(out)]) == 0
    summary = _summary(out)
    assert summary["config"]["instruction"] == ""
    assert summary["micro"]["pass@1"] >= 0.25  # the default instruction made demo models score 0 of 16


def test_eval_handoff_runs_on_a_mid_run_checkpoint_with_the_base_as_junior(quick_demo, tmp_path):
    out = tmp_path / "handoff"
    assert main(["eval-handoff", "--senior", str(quick_demo / "tandem" / "checkpoint-6" / "model"), "--junior",
                 str(quick_demo / "sft" / "model"), "--benchmarks", str(quick_demo / TEST_SPLIT), "--n", "1",
                 "--max-problems", "8", "--max-new-tokens", BUDGET, "--out-dir", str(out)]) == 0
    assert _summary(out)["config"]["instruction"] == ""


def _eval_run(model: Path, *argv: str) -> EvalRun:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    flags.add_common_arguments(parser)
    return EvalRun.from_args(parser.parse_args(["--model", str(model), "--out-dir", "unused", *argv]))


def test_the_instruction_is_the_flag_then_the_models_record_then_the_presets(tmp_path):
    plain = tmp_path / "plain"
    plain.mkdir()
    for model in (plain, tmp_path):  # what the eval's early check asks of a local model folder
        (model / "config.json").write_text("{}")
    assert _eval_run(plain).instruction == flags.DEFAULTS.instruction  # no record: the preset's
    write_prompt_format(tmp_path, "Answer in one line.")
    assert _eval_run(tmp_path).instruction == "Answer in one line."
    assert _eval_run(tmp_path, "--instruction", "given").instruction == "given"  # a flag given wins


def test_a_prompt_record_that_cannot_be_read_is_refused(tmp_path):
    (tmp_path / PROMPT_FORMAT_NAME).write_text('{"instr": ""}')
    with pytest.raises(TandemError, match="instruction"):
        recorded_instruction(tmp_path)


def test_hf_checkpoints_keep_the_newest_k_and_none_with_zero(tiny_dir, tmp_path):
    from tandem.models.loading import load_model, load_tokenizer

    model, tokenizer = load_model(tiny_dir), load_tokenizer(tiny_dir)
    for step in (2, 4, 6):
        save_hf_checkpoint(model, tokenizer, tmp_path / "run", step, keep=2)
    assert [s for s, _ in hf_checkpoints(tmp_path / "run")] == [4, 6]
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == ["checkpoint-4", "checkpoint-6"]
    assert recorded_instruction(tmp_path / "run" / "checkpoint-6" / "model") == ""
    assert save_hf_checkpoint(model, tokenizer, tmp_path / "none", 2, keep=0) is None
    assert not (tmp_path / "none").exists()
