"""Hydra entry point for tandem RLVR on verl 0.9.1.

    python verl/main_tandem_ppo.py key=value ...      (see run_tandem_native_grpo_deepscaler.sh)

Same as `python -m verl.trainer.main_ppo`, except that the config is
`verl/config/tandem_trainer.yaml` (verl's ppo_trainer plus a `tandem:` block) and that
`tandem_verl.wiring.apply_tandem` validates the block and points verl at the
tandem agent loop, actor worker, trainer and vLLM engine before Ray starts. With
`tandem.enable=false` it runs verl's stock task runner (plain GRPO), or with
`partner_reward.weight>0` verl's sync trainer plus the partner score (RLT's setting) or, with
`partner_reward.kind=transfer`, RLTR's transfer reward (the base continues in a tandem engine). Only this file
registers the config node `tandem_trainer.yaml` names in its defaults list, so verl's
stock entry point cannot compose the file and silently ignore its `tandem:` block.

This directory has no __init__.py on purpose: a `verl` package here would shadow the
installed verl.
"""

import hydra

from tandem_verl.wiring import apply_tandem, register_entry_node

register_entry_node()  # before @hydra.main composes tandem_trainer.yaml


@hydra.main(config_path="config", config_name="tandem_trainer", version_base=None)
def main(config) -> None:
    from verl.plugin.platform import get_platform
    from verl.trainer.main_ppo import TaskRunnerV1, run_ppo
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config
    from verl.utils.device import auto_set_device

    settings = apply_tandem(config)  # the run's settings, read once
    auto_set_device(config)
    if get_platform().device_name == "cpu":  # verl selected our CPU platform, so verl has loaded its module
        from tandem_verl.cpu_platform import check_cpu_config

        check_cpu_config(config)
    validate_config(config=config, use_reference_policy=need_reference_policy(config), use_critic=need_critic(config))
    runner = TaskRunnerV1
    if settings.tandem.enable:
        from tandem_verl.trainer import TandemTaskRunner

        runner = TandemTaskRunner
    elif settings.partner.enabled:  # GRPO scored by its base: verl's trainer plus the score
        from tandem_verl.trainer import PartnerTaskRunner

        runner = PartnerTaskRunner
    run_ppo(config, task_runner_class=runner)


if __name__ == "__main__":
    main()
