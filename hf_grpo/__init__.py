"""The Hugging Face TRL library as a trainer backend (registry key `hf_trl`): tandem rollouts inside its `GRPOTrainer`.

Named for the library's trainer, not for the method: TRL in this project's docs is Tandem RL.

- `tandem_rollout`: the `rollout_func` over the reference engine (CPU-tested, TRL 1.16);
- `rewards`: TRL reward functions, the project's grader, the partner score and RLTR's transfer reward;
- `solution_writer`: each training prompt's writer prompt when the writer sees the solution (RLT's teacher input);
- `junior_callback`: `JuniorUpdater`, a junior that follows the senior (`tandem.junior_update`), as a callback;
- `trainer_access`: what the rollout reads from the trainer (senior, sampling, prompt ids), checked;
- `trl_version`: the TRL release the rollout needs;
- `metrics_callback`: TRL's step logs as metrics rows under the shared names;
- `solo_validation`: greedy accuracy of the senior alone.
"""

from hf_grpo.junior_callback import JuniorUpdater
from hf_grpo.metrics_callback import MetricsCallback
from hf_grpo.rewards import grader_reward
from hf_grpo.solo_validation import solo_accuracy
from hf_grpo.tandem_rollout import TandemRolloutFunc, tandem_rollout_func
from hf_grpo.trl_version import check_trl

__all__ = ["JuniorUpdater", "MetricsCallback", "TandemRolloutFunc", "check_trl", "grader_reward", "solo_accuracy",
           "tandem_rollout_func"]
