"""SFT on worked solutions: assistant-only loss, and a saved, loadable base."""

from __future__ import annotations

import torch

from tandem.models.loading import load_model, load_tokenizer
from tandem_app.task import generate_problems
from tandem_app.train.data import prompt_ids, response_ids
from tandem_app.train.sft import SFTConfig, run_sft, sft_batch, sft_loss


def test_sft_labels_cover_exactly_the_assistant_tokens(tiny_dir):
    tok = load_tokenizer(tiny_dir)
    problems = generate_problems("train", 2)
    examples = [(prompt_ids(tok, p), response_ids(tok, p.solution)) for p in problems]
    input_ids, labels = sft_batch(examples, tok.pad_token_id)
    for row, (p, r) in enumerate(examples):
        assert (labels[row, : len(p)] == -100).all()
        assert labels[row, len(p) : len(p) + len(r)].tolist() == r
        assert (labels[row, len(p) + len(r) :] == -100).all()
        assert r[-1] == tok.convert_tokens_to_ids("<|im_end|>")
        assert tok.decode(r, skip_special_tokens=True) == problems[row].solution


def test_sft_lowers_the_loss_and_saves_a_loadable_base(tiny_dir, tmp_path):
    tok = load_tokenizer(tiny_dir)
    held_out = generate_problems("validation", 8)
    batch = sft_batch([(prompt_ids(tok, p), response_ids(tok, p.solution)) for p in held_out], tok.pad_token_id)
    with torch.no_grad():
        before = sft_loss(load_model(tiny_dir), *batch).item()
    cfg = SFTConfig(
        model=str(tiny_dir),
        out=str(tmp_path / "sft"),
        steps=40,
        batch_size=16,
        warmup_steps=5,
        n_train_problems=400,
        n_val_problems=4,
        max_new_tokens=16,
        log_every=10,
    )
    summary = run_sft(cfg, progress=False)
    with torch.no_grad():
        after = sft_loss(load_model(summary["model"]), *batch).item()
    assert after < 0.6 * before, (before, after)
    assert 0.0 <= summary["val_greedy_acc"] <= 1.0


def test_sft_on_given_examples_trains_on_them_and_refuses_a_resume_on_others(tiny_dir, tmp_path):
    import json

    import pytest

    from tandem.errors import TandemError

    tok = load_tokenizer(tiny_dir)
    problems = generate_problems("train", 4)
    examples = [(prompt_ids(tok, p), response_ids(tok, "The answer is \\boxed{7}.")) for p in problems]
    cfg = SFTConfig(model=str(tiny_dir), out=str(tmp_path / "sft"), steps=2, batch_size=2, warmup_steps=0,
                    save_every=1, log_every=1)
    summary = run_sft(cfg, progress=False, examples=examples)
    assert summary["val_greedy_acc"] is None and summary["steps"] == 2
    saved = json.loads((tmp_path / "sft" / "config.json").read_text())
    assert saved["examples"]["count"] == 4 and len(saved["examples"]["sha256"]) == 64
    assert run_sft(cfg, resume=True, progress=False, examples=examples)["steps"] == 2  # finished: reused
    with pytest.raises(TandemError, match=r"different config .*\(examples.sha256\)"):
        run_sft(cfg, resume=True, progress=False, examples=examples[:3] + examples[:1])
