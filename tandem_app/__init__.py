"""The applications on top of every layer: the embedded trainer and demo, the `tandem-rlvr` CLI.

- `train`: SFT of the pre-RL base, the GRPO/tandem trainer, evaluation during training,
  the demo and its report.
- `commands`: the `tandem-rlvr` subcommands.
"""
