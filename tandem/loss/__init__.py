"""The training loss: GRPO math, the loss settings, the senior gate, per-token log-probabilities."""
