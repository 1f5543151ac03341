"""The embedded Tandem RL pipeline: SFT of the pre-RL base and the GRPO/TRL trainer (the demo and the
experiments on it: `tandem_app/experiments/`).

Modules, one idea each:
- `data`: chat formatting of task problems and padding of token batches.
- `checkpoint`: atomic checkpoints and bit-for-bit resume; `resume`: what a resume accepts.
- `metrics`: per-step metrics to console and `metrics.jsonl` (flat or verl rows); `log_sinks`: wandb, tensorboard.
- `sft`: supervised fine-tuning on worked solutions -> the pre-RL base.
- `train_config`: the GRPO/TRL run's typed settings.
- `rollout_batch`: one step's groups, sampled and scored; `ppo_update`: the update of the senior.
- `grpo_trainer`: the trainer's models and one step; `grpo_run`: the run around the steps.
- `schedule`: the learning-rate schedule both trainers step by.
- `evaluate`: solo and handoff accuracy, pass@k, token drift.
"""
