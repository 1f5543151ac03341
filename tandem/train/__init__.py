"""The embedded TRL pipeline: SFT of the pre-RL base, the GRPO/TRL trainer, and the demo.

Modules, one idea each:
- `config`: typed dataclass configs loaded from YAML/JSON plus `key=value` overrides.
- `data`: chat formatting of task problems and padding of token batches.
- `reward`: the verifiable reward (one function, the eval's grader when available).
- `logprobs`: per-token log-probabilities of responses under a model, with gradient.
- `checkpoint`: atomic checkpoints and bit-for-bit resume.
- `metrics`: per-step metrics to console, JSONL and (optionally) wandb.
- `sft`: supervised fine-tuning on worked solutions -> the pre-RL base.
- `grpo_trainer`: GRPO with solo (`grpo`) or tandem (`trl`) rollouts.
- `evaluate`: solo and handoff accuracy, pass@k, token drift.
- `demo`, `report`: the end-to-end miniature of the paper and its report.
"""
