"""Supervised fine-tuning on the task's worked solutions: the pre-RL base.

Each example is a chat: user = the problem, assistant = its worked solution followed by
`<|im_end|>`. The loss is the token-mean cross-entropy over assistant tokens only. The
result, saved under `OUT/model` (and at each save as `OUT/checkpoint-N/model`:
`hf_checkpoints`), is the base the paper pairs with itself: the junior (frozen) and the
senior's initialisation.

`run_sft(..., examples=...)` trains on given (prompt ids, response ids) pairs instead of
the task's demonstrations (a teacher's traces: `tandem-rlvr distill`), with the same loop,
checkpoints, resume and lock; their count and digest join the saved config, so a resume
on other examples is refused like one with another learning rate. Such a run has no task
to validate on: its summary's `val_greedy_acc` is None.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from pathlib import Path

import torch
from tqdm.auto import tqdm

from tandem.models.threads import apply_threads
from tandem.io import run_lock
from tandem.io.config_files import config_to_dict
from tandem.errors import RunFailed, RunInterrupted, TandemError
from tandem.io.jsonl import write_json
from tandem.loss.logprobs import pad_right
from tandem.io.metric_log import ELAPSED, GRAD_NORM, LOSS, LR, SFT_VAL_ACCURACY
from tandem.models.loading import load_model, load_tokenizer
from tandem_app.task import demonstration, generate_problems
from tandem_app.train.checkpoint import (
    kept_words,
    restore_checkpoint,
    save_checkpoint,
    save_pretrained_atomic,
    stopped_words,
)
from tandem_app.train.data import batch_indices, prompt_ids_batch, response_ids
from tandem_app.train.evaluate import greedy_solo_accuracy
from tandem_app.train.schedule import lr_at
from tandem_app.train.finite import NonFiniteStep, check_step_finite
from tandem_app.train.hf_checkpoints import save_hf_checkpoint
from tandem_app.train.log_sinks import check_sinks, logger_settings
from tandem_app.train.metrics import METRICS_NAME, MetricsLogger
from tandem_app.train.resume import start_run
from tandem_app.train.sft_config import SFTConfig  # noqa: F401  (the run's settings, re-exported)

SUMMARY = "summary.json"


def sft_batch(examples: list[tuple[list[int], list[int]]], pad_id: int):
    """(input_ids [B, L], labels [B, L] with -100 outside assistant tokens)."""
    seqs = [p + r for p, r in examples]
    labels = [[-100] * len(p) + r for p, r in examples]
    return pad_right(seqs, pad_id), pad_right(labels, -100)


def sft_loss(model, input_ids: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Token-mean cross-entropy of assistant tokens."""
    logits = model(input_ids=input_ids, use_cache=False).logits[:, :-1].float()
    target = labels[:, 1:]
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), target.reshape(-1), ignore_index=-100
    )


Example = tuple[list[int], list[int]]  # (prompt ids, response ids); the loss covers the response only


def examples_record(examples: list[Example]) -> dict:
    """What a run's config records of given examples: their count and a digest of every id."""
    digest = hashlib.sha256(json.dumps(examples, separators=(",", ":")).encode()).hexdigest()
    return {"count": len(examples), "sha256": digest}


def run_sft(cfg: SFTConfig, resume: bool = False, progress: bool = True,
            examples: list[Example] | None = None, trust_unverified: bool = False) -> dict:
    """Train, validate (greedy solo accuracy) and save the base, holding OUT's lock; return the summary.

    `examples` (prompt ids, response ids): train on these instead of the task's demonstrations (no validation).
    """
    if not cfg.model:
        raise TandemError("sft needs model=DIR (an HF model, e.g. from `tandem-rlvr build-tiny`)")
    if not cfg.out:
        raise TandemError("sft needs out=DIR (or --out DIR), where the base is written")
    if examples is not None and not examples:
        raise TandemError("sft was given no examples to train on")
    check_sinks(cfg)  # a logger's missing package: refused before the run's folder is made
    with run_lock.hold(cfg.out):
        return _run_sft(cfg, Path(cfg.out), resume, progress, examples, trust_unverified)


def _task_examples(cfg: SFTConfig, tokenizer) -> list[Example]:
    """The task's training problems, each with a demonstrator's worked solution."""
    train = generate_problems("train", cfg.n_train_problems, cfg.seed, cfg.task)
    rng = random.Random(f"demonstrations/{cfg.seed}")
    texts = [demonstration(p, cfg.demos, rng) for p in train]
    return list(zip(prompt_ids_batch(tokenizer, train), (response_ids(tokenizer, t) for t in texts)))


def _run_sft(cfg: SFTConfig, out: Path, resume: bool, progress: bool, given: list[Example] | None,
             trust_unverified: bool = False) -> dict:
    config = config_to_dict(cfg)
    if given is not None:
        config["examples"] = examples_record(given)
    tokenizer = load_tokenizer(cfg.model)  # a folder that holds no tokenizer: refused before config.json is written
    start = start_run(out, config, resume, trust_unverified)
    if start.finished is not None:
        return start.finished
    apply_threads(cfg.threads, [cfg.model])
    torch.manual_seed(cfg.seed)
    model = load_model(cfg.model, device=cfg.device).train().requires_grad_(True)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.95))

    examples = _task_examples(cfg, tokenizer) if given is None else given
    val = generate_problems("validation", cfg.n_val_problems, cfg.seed, cfg.task) if given is None else None

    earlier = 0.0  # wall time of the launches before this one, up to their last checkpoint
    if start.state is not None:
        restore_checkpoint(start.state, model, opt)
        earlier = start.state.get("extra", {}).get("elapsed_s", 0.0)
    logger = MetricsLogger(out / METRICS_NAME, resume_step=start.step if start.state else None, console=progress,
                           **logger_settings(cfg, out, f"sft-{out.name}"))
    t0 = time.time()
    try:
        final_loss = _sft_loop(cfg, out, model, opt, tokenizer, examples, val, logger, start.step,
                               lambda: {"config": config, "elapsed_s": earlier + time.time() - t0}, progress)
        val_acc = None
        if val is not None:
            val_acc = greedy_solo_accuracy(model, tokenizer, val, cfg.max_new_tokens)
            logger.log(cfg.steps, {SFT_VAL_ACCURACY: val_acc})
    except KeyboardInterrupt:
        raise RunInterrupted(kept_words(out, logger.last_step, cfg.steps)) from None
    finally:
        logger.close()
    save_pretrained_atomic(model, tokenizer, out / "model")
    summary = {
        "phase": "sft",
        "steps": cfg.steps,
        "final_loss": final_loss,  # the mean loss of the last logged steps (None when this launch logged none)
        SFT_VAL_ACCURACY: val_acc,  # None when trained on given examples
        "model": str(out / "model"),
        "wall_seconds": earlier + time.time() - t0,  # every launch, each up to its last checkpoint
        "train_seconds": time.time() - t0,  # this launch
    }
    write_json(out / SUMMARY, summary)
    return summary


def _sft_loop(cfg: SFTConfig, out: Path, model, opt, tokenizer, examples, val, logger, start: int, extra,
              progress: bool) -> float | None:
    """Steps `start`..`cfg.steps`; return the last logged loss."""
    bar = tqdm(range(start, cfg.steps), initial=start, total=cfg.steps, desc="sft", disable=not progress)
    recent, last_loss = [], None
    for step in bar:
        lr = lr_at(step, cfg.lr, cfg.warmup_steps, cfg.steps, cfg.min_lr_ratio)
        for g in opt.param_groups:
            g["lr"] = lr
        batch = [examples[i] for i in batch_indices(len(examples), cfg.batch_size, cfg.seed, step)]
        input_ids, labels = (t.to(cfg.device) for t in sft_batch(batch, tokenizer.pad_token_id))
        loss = sft_loss(model, input_ids, labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        try:
            check_step_finite(loss.item(), float(grad_norm))  # before the update: the weights stay finite
        except NonFiniteStep as e:
            raise RunFailed(f"step {step + 1}: {e.what} is not finite; stopped before the update "
                            f"({stopped_words(out)}); lower lr and start a new --out") from None
        opt.step()
        recent.append(loss.item())
        done = step + 1
        metrics = {}
        if done % cfg.log_every == 0 or done == cfg.steps:
            last_loss = sum(recent) / len(recent)
            metrics.update({LOSS: last_loss, LR: lr, GRAD_NORM: float(grad_norm), ELAPSED: extra()["elapsed_s"]})
            bar.set_postfix(loss=f"{last_loss:.3f}")
            recent = []
        if val is not None and cfg.val_every and done % cfg.val_every == 0 and done != cfg.steps:
            metrics[SFT_VAL_ACCURACY] = greedy_solo_accuracy(model, tokenizer, val, cfg.max_new_tokens)
        if metrics:
            logger.log(done, metrics)
        if done % cfg.save_every == 0 or done == cfg.steps:
            save_checkpoint(out, model, opt, done, extra=extra())
            save_hf_checkpoint(model, tokenizer, out, done, cfg.keep_checkpoints)
    bar.close()
    return last_loss
