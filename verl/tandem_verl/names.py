"""The names verl finds the tandem classes by, and the config keys the wiring writes for them.

verl looks a trainer, an agent loop and a reward function up by a string in its config;
these are the strings `tandem_verl.wiring.apply_tandem` writes (and the launchers spell).
The `_target_`-style dotted paths are contracts a user may write in a config or an
override, so they name classes whose modules stay where they are.
"""

from __future__ import annotations

TRAINER_MODE = "tandem_sync"  # registered by tandem_verl.trainer
PARTNER_TRAINER_MODE = "partner_sync"  # a GRPO run scored by its base (RLT's setting); tandem_verl.trainer
AGENT_LOOP = "tandem_agent"  # registered by tandem_verl.agent_loop
SOLUTION_AGENT_LOOP = "solution_writer_agent"  # a solo writer that sees the solution; tandem_verl.solution_writer
TRANSFER_WRITER_AGENT_LOOP = "transfer_writer_agent"  # a GRPO writer in the tandem engine; tandem_verl.transfer_reward
AGENT_LOOP_MANAGER = "tandem_verl.agent_loop.TandemAgentLoopManager"
REWARD_PATH = "pkg://tandem_verl.reward"
WORKER_KEY = "tandem"  # actor_rollout_ref.tandem: what the actor worker needs
VALIDATE_KEY = "tandem_validate"  # the flag TandemAgentLoopManager adds to each request
TRANSFER_FIELD = "tandem_transfer"  # a training sample's `extra_fields` entry: its transfer (`result_record`)
PLAIN_PROMPT = "plain_prompt_ids"  # the plain question prompt, where the writer read the solution too
SCORER_KEY = "tandem_scorer"  # actor_rollout_ref.tandem_scorer: the model verl's reference worker loads to score
