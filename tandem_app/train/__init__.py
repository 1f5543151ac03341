"""The embedded Tandem RL pipeline: SFT of the pre-RL base, the GRPO/TRL trainer, and the demo.

Modules, one idea each:
- `data`: chat formatting of task problems and padding of token batches.
- `logprobs`: per-token log-probabilities of responses under a model, with gradient.
- `checkpoint`: atomic checkpoints and bit-for-bit resume.
- `metrics`: per-step metrics to console, JSONL and (optionally) wandb.
- `sft`: supervised fine-tuning on worked solutions -> the pre-RL base.
- `grpo_trainer`: GRPO with solo (`grpo`) or tandem (`tandem`) rollouts.
- `evaluate`: solo and handoff accuracy, pass@k, token drift.
- `demo`, `report`: the end-to-end miniature of the paper and its report.
"""
