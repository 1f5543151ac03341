"""What TRL's GRPOTrainer reads of a TrainConfig, and what it refuses.

`scripts/hf_trl_tandem.py` takes `tandem-rlvr train`'s settings (one `TrainConfig`, parsed
by the CLI's own functions) and trains with TRL. `grpo_config` maps the keys in `READS` onto
TRL's `GRPOConfig`, `tandem_rollout` builds the rollout function from the tandem, sampling
and partner-reward sections. `check_settings` refuses, in one line and before any model
loads, every key TRL cannot honour that the config changes from its default (`NOT_READ`,
with why), a read key at a value TRL does not run (`ONLY`), and a mini-batch count TRL
cannot split a step into.

A `steps` step is one generation batch (`prompts_per_step * group_size` responses), as in
the embedded trainer: `ppo_mini_batches` optimizer steps over it per epoch, `ppo_epochs`
epochs. TRL runs the same schedule through its own buffering, which the `rollout_func` path
keeps (TRL calls it once per generation batch, buffers the result and slices it):
`steps_per_generation = ppo_mini_batches`, `per_device_train_batch_size` one mini-batch, and
`num_iterations = ppo_epochs`. TRL's slices are equal (of rows it shuffles first), so a
`ppo_mini_batches` that does not divide the responses is refused. With more than one
optimizer step a step, TRL recomputes the old log-probs, so the clip is the embedded
trainer's. TRL counts optimizer steps, so `max_steps`, `warmup_steps` and `logging_steps`
are multiplied by `updates_per_step` (one log per generation batch); the run (`hf_trl_run`)
numbers its metrics rows in steps. The junior's `sync:K` counts optimizer steps in both.
"""

from __future__ import annotations

from pathlib import Path

from tandem.errors import TandemError

# The TrainConfig keys TRL reads (a section: every key in it), each mapped in `grpo_config`, `tandem_rollout`
# or `hf_trl_run`. Any other key set to other than its default is refused (`NOT_READ`).
READS = ("method", "model", "out", "seed", "steps", "prompts_per_step", "group_size", "lr", "warmup_steps",
         "weight_decay", "grad_clip", "ppo_epochs", "ppo_mini_batches", "adv_estimator", "norm_adv_by_std",
         "n_train_problems", "n_val_problems", "val_every", "engine_mode", "device", "threads", "wandb",
         "wandb_project", "wandb_mode", "metrics_format", "tensorboard", "tensorboard_dir", "sampling", "tandem",
         "loss.loss_agg_mode", "loss.loss_denominator", "loss.clip_ratio", "loss.clip_ratio_low",
         "loss.clip_ratio_high", "task", "partner_reward")
# loss.loss_agg_mode -> TRL's loss_type (with the authorship mask as TRL's tool_mask every mode counts senior tokens)
LOSS_TYPES = {"token-mean": "dapo", "seq-mean-token-mean": "grpo", "seq-mean-token-sum-norm": "dr_grpo"}
# A read key that TRL runs with some values only: the values, and why.
ONLY = {
    "adv_estimator": (("grpo",), "TRL's advantage is GRPO's group-normalised one"),
    "loss.loss_agg_mode": (tuple(LOSS_TYPES), "TRL's loss types"),
    "loss.loss_denominator": (("senior_tokens",), "TRL's tool_mask drops junior tokens from the denominator too"),
    "device": (("cpu", "cuda"), "accelerate places the model; pick the GPU with CUDA_VISIBLE_DEVICES"),
}
NO_CHECKPOINTS = "this script keeps no checkpoints; --save-model saves the final senior"
NO_KL = "TRL's beta is not wired here"
NOT_READ = {  # why each key TRL does not honour is refused when changed
    "adv_epsilon": "TRL's advantage divides by std + 1e-4",
    "save_every": NO_CHECKPOINTS, "keep_checkpoints": NO_CHECKPOINTS,
    "loss.junior_token_loss_weight": "TRL's tool_mask gives junior tokens no gradient",
    "loss.policy_loss": "TRL's GRPO loss is the clipped (vanilla) one",
    "loss.clip_ratio_c": "TRL's loss has no dual clip",
    "loss.entropy_coeff": "TRL's GRPO loss has no entropy bonus",
    "loss.use_kl_loss": NO_KL, "loss.kl_loss_coef": NO_KL, "loss.kl_loss_type": NO_KL,
    "tandem.senior_architecture": "a vLLM key; the reference engine reads the model's own config",
}


def is_read(key: str) -> bool:
    """Whether TRL reads the TrainConfig key `key` (dotted)."""
    return key not in NOT_READ and any(key == r or key.startswith(r + ".") for r in READS)


def check_settings(cfg, dataset: str | None = None) -> None:
    """Everything TRL cannot honour of `cfg` (a built, valid TrainConfig), in one line, before any model loads."""
    from tandem.io.config_files import config_diff, config_to_dict
    from tandem.trainers import require, require_partner_reward

    changed = config_diff(config_to_dict(cfg), config_to_dict(type(cfg)()))
    unread = [k for k in changed if not is_read(k)]
    if unread:
        raise TandemError("HF TRL cannot honour " + "; ".join(
            f"{k}={_value(cfg, k)} ({NOT_READ.get(k, 'not read by scripts/hf_trl_tandem.py')})" for k in unread)
            + "; leave " + ("it" if len(unread) == 1 else "them") + " at the default")
    for key, (values, why) in ONLY.items():
        if _value(cfg, key) not in values:
            raise TandemError(f"HF TRL cannot honour {key}={_value(cfg, key)} ({why}); use {' or '.join(values)}")
    check_mini_batches(cfg)
    if dataset and (synthetic := [k for k in changed if k == "n_train_problems" or k.startswith("task.")]):
        raise TandemError(f"{', '.join(synthetic)} set the synthetic task, but --dataset {dataset} is the task; "
                          "drop one")
    require_partner_reward("hf_trl", cfg.partner_reward)
    require("hf_trl", "junior_update_kinds", cfg.tandem.junior_update_rule.kind)
    require("hf_trl", "placements", cfg.tandem.placement)
    if not cfg.out:
        raise TandemError("no run directory: pass --out DIR")


def check_mini_batches(cfg) -> None:
    """TRL slices a generation batch into `steps_per_generation` equal parts; the embedded trainer rounds."""
    responses, k = cfg.prompts_per_step * cfg.group_size, cfg.ppo_mini_batches
    if responses % k:
        divisors = [d for d in range(1, responses + 1) if responses % d == 0]
        raise TandemError(f"HF TRL cannot honour ppo_mini_batches={k}: TRL splits a step's {responses} responses "
                          f"(prompts_per_step * group_size) into equal mini-batches; set ppo_mini_batches to one of "
                          f"{', '.join(map(str, divisors))}, or change prompts_per_step")


def updates_per_step(cfg) -> int:
    """Optimizer steps per `steps` step: TRL's global_step advances by this much per generation batch."""
    return cfg.ppo_mini_batches * cfg.ppo_epochs


def _value(cfg, key: str):
    for part in key.split("."):
        cfg = getattr(cfg, part)
    return cfg


def grpo_config(cfg):
    """TRL's GRPOConfig from a TrainConfig: every GRPOConfig field the run sets, from the keys in READS."""
    from trl import GRPOConfig

    check_mini_batches(cfg)  # the division below is exact
    s, loss, per_step = cfg.sampling, cfg.loss, updates_per_step(cfg)
    low = loss.clip_ratio if loss.clip_ratio_low is None else loss.clip_ratio_low
    high = loss.clip_ratio if loss.clip_ratio_high is None else loss.clip_ratio_high
    return GRPOConfig(
        output_dir=str(Path(cfg.out) / "trl"), seed=cfg.seed, num_generations=cfg.group_size,
        # one generation batch per step, ppo_mini_batches slices of it per epoch (see the module docstring)
        per_device_train_batch_size=cfg.prompts_per_step * cfg.group_size // cfg.ppo_mini_batches,
        steps_per_generation=cfg.ppo_mini_batches, num_iterations=cfg.ppo_epochs, gradient_accumulation_steps=1,
        max_steps=cfg.steps * per_step, warmup_steps=cfg.warmup_steps * per_step, logging_steps=per_step,
        learning_rate=cfg.lr, lr_scheduler_type="constant_with_warmup",
        weight_decay=cfg.weight_decay, max_grad_norm=cfg.grad_clip,
        scale_rewards="group" if cfg.norm_adv_by_std else "none", loss_type=LOSS_TYPES[loss.loss_agg_mode],
        epsilon=low, epsilon_high=high,
        temperature=s.temperature, top_p=s.top_p, top_k=s.top_k, max_completion_length=s.max_new_tokens,
        use_cpu=cfg.device == "cpu", bf16=cfg.device != "cpu",
        save_strategy="no", report_to=[], disable_tqdm=True,
    )


def tandem_rollout(cfg):
    """The rollout function: the tandem section, the sampling section (stop strings and ids too), the partner reward."""
    from hf_grpo import tandem_rollout_func

    return tandem_rollout_func(tandem_config=cfg.tandem, sampling=cfg.sampling, engine_mode=cfg.engine_mode,
                               solo=not cfg.is_tandem, partner_reward=cfg.partner_reward)
