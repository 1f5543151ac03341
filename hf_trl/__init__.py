"""The Hugging Face TRL backend: tandem rollouts inside TRL's `GRPOTrainer`.

- `tandem_rollout`: a `rollout_func` over the reference engine (CPU-tested, TRL 1.16).
"""
