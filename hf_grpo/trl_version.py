"""Which Hugging Face TRL the tandem rollout runs on, checked before anything is built.

The rollout needs `GRPOTrainer(rollout_func=...)` and a trainer that reads the rollout's
`env_mask` (the authorship mask) into its loss; TRL 1.16.0 is the release tested. An older
TRL without either is refused in one line, since without `env_mask` the junior's tokens
would be trained.
"""

from __future__ import annotations

import inspect

from tandem.errors import TandemError

TRL_TESTED = "1.16.0"


def check_trl() -> None:
    """Raise unless the installed TRL has `GRPOTrainer(rollout_func=...)` and reads `env_mask` from it."""
    try:
        import trl
        from trl import GRPOTrainer
    except ImportError:
        raise TandemError(
            f"Hugging Face TRL is not installed; pip install 'tandem-rlvr[hf-trl]' (trl=={TRL_TESTED})"
        ) from None
    version = getattr(trl, "__version__", "?")
    if "rollout_func" not in inspect.signature(GRPOTrainer.__init__).parameters:
        raise TandemError(f"trl {version}'s GRPOTrainer has no rollout_func; install trl=={TRL_TESTED}")
    try:
        source = inspect.getsource(GRPOTrainer)
    except (OSError, TypeError):
        source = ""
    if "env_mask" not in source:
        raise TandemError(
            f"trl {version}'s GRPOTrainer ignores a rollout's env_mask, so junior tokens would be trained; "
            f"install trl=={TRL_TESTED}"
        )
