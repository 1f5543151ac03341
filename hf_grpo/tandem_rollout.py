"""Tandem RL inside Hugging Face TRL's `GRPOTrainer`: a `rollout_func` over the reference engine.

TRL (>= 1.16, tested with 1.16.0) lets a rollout function replace its generation:
`GRPOTrainer(rollout_func=f)` calls `f(prompts, trainer)` once per generation batch with
this process's prompts, already repeated `num_generations` times each (the sampler does
it, `trl/trainer/grpo_trainer.py` `_get_train_sampler`), and wants one completion per
prompt row back: `prompt_ids`, `completion_ids`, `logprobs`, optionally `env_mask`
(1 = a token the policy wrote; TRL turns it into the loss's `tool_mask`, so the loss and
its `dapo`/`bnpo` denominators count masked tokens only) and any extra keys, which TRL
hands to the reward functions as keyword arguments, one value per row.

`tandem_rollout_func` builds such a function. Each call runs the project's reference
engine (`tandem.reference.engine.TandemEngine`) over the trainer's live senior (the model TRL
trains, unwrapped as TRL unwraps it) and a frozen junior (by default a frozen copy of
the senior taken before the first update: the paper's self-paired junior; with
`tandem.junior_update` `sync:K` or `ema:BETA` that copy follows the senior after each
optimizer step, through `hf_grpo.junior_callback.JuniorUpdater`, and is saved in each
checkpoint). Every row's request key is `tandem.process.coins.request_key` of (mode, step, prompt
ids) and the row's sample number, so a rerun replays the same coins and tokens. It returns
the authorship mask as `env_mask` and the response's senior token fraction as an extra key
(named `tandem.io.legacy.SENIOR_FRACTION_FIELD`: reward functions take it by that keyword). The
batch's authorship statistics are logged every step under the shared names
(`RolloutStats.metrics` with the prefix `tandem.io.metric_log.TANDEM_PREFIX`:
`"tandem/senior_token_fraction"`, `"tandem/mean_handoffs"`, ... in TRL's logs; `last_stats`
here). Evaluation batches (`trainer.model.training` False) are written by the senior alone
unless `solo_eval=False`. With `partner_reward.writer_sees_solution` a training batch is
written from RLT's teacher prompt, question and solution (`hf_grpo.solution_writer`), returned
as `prompt_ids` so TRL's loss sees what the writer read; evaluation batches keep the plain
prompt, and the plain prompt ids go to the partner score as `plain_prompt_ids`. With
`partner_reward.kind=transfer` (RLTR's transfer reward) the receiver (`transfer.receiver`, else
the junior, else for a solo run a frozen copy of the senior before training: the base) gets a
solo reference engine of its own (`receiver`); `partner_reward_func()` then continues each
response's leak-free prefix with it (`hf_grpo.rewards.transfer_reward_function`). Only the grade
comes back: the receiver's tokens never enter TRL's batch, so never its loss.

What is refused, in one line each before the first generation (`check(trainer)` runs the
checks right after the trainer is built): a TRL without `rollout_func` or `env_mask`;
TRL's vLLM mode (it builds its own single-model vLLM `LLM`, which cannot run the tandem
model: `trl/generation/vllm_generation.py`, `self.llm = LLM(model=model.name_or_path, ...)`
with no logits processor and no second model); a junior of another vocabulary;
`num_generations` not dividing the generation batch; a transfer receiver of another vocabulary
(`tandem.models.loading.load_receiver`, the embedded trainer's check); a senior the rollout cannot read
(PEFT adapters, DeepSpeed ZeRO-3 or FSDP shards, a processor instead of a tokenizer, an
architecture the reference engine does not run): `hf_grpo.trl_version` and
`hf_grpo.trainer_access`. TRL's reward functions (the grader, the partner score) are in
`hf_grpo.rewards`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from hf_grpo.junior_callback import JuniorUpdater
from hf_grpo.rewards import grader_reward, partner_reward_function, transfer_reward_function
from hf_grpo.solution_writer import SolutionBook
from hf_grpo.trainer_access import (check_generation_settings, reachable_senior, text_tokenizer, tokenize_prompts,
                                   trainer_sampling)
from hf_grpo.trl_version import check_trl
from tandem.process.coins import request_key
from tandem.process.config import ENGINE_MODES, TandemConfig
from tandem.errors import TandemError
from tandem.grading.gold import check_golds
from tandem.io.legacy import SENIOR_FRACTION_FIELD
from tandem.grading import reward as grade_reward
from tandem.models.loading import check_same_vocab, load_model, load_receiver, load_tokenizer
from tandem.rewards.partner_config import PartnerRewardConfig
from tandem.io.metric_log import MEAN_HANDOFFS, SENIOR_TOKEN_FRACTION, TANDEM_PREFIX
from tandem.rollout.contract import RolloutStats, stats_of_masks
from tandem.rollout.sampling import SamplingConfig
from tandem.trainers import require, require_partner_reward
from tandem_backends.registry import build_backend

# What `from hf_grpo.tandem_rollout import ...` gives (README): the rollout, and the grader as its reward.
__all__ = ["TandemRolloutFunc", "tandem_rollout_func", "grader_reward"]

@dataclass
class BatchStats:
    """Authorship statistics of the last generation batch (all processes; `tandem.rollout.contract.rollout_stats`)."""

    step: int = -1
    mode: str = "train"
    senior_token_fraction: float = float("nan")  # senior tokens / response tokens
    mean_handoffs: float = float("nan")  # mean authorship changes per response
    responses: int = 0


@dataclass
class TandemRolloutFunc:
    """The `rollout_func` of a tandem GRPOTrainer; build it with `tandem_rollout_func`."""

    junior: object = None  # a model, a path, or None (a frozen copy of the senior, or tandem.junior_model)
    tandem: TandemConfig = field(default_factory=TandemConfig)
    sampling: SamplingConfig | None = None  # None: from the trainer's GRPOConfig
    junior_tokenizer: object = None
    engine_mode: str = "auto"
    solo_eval: bool = True
    solo: bool = False  # the senior writes alone (plain GRPO on the same engine, keys and sampling)
    partner_reward: PartnerRewardConfig = field(default_factory=PartnerRewardConfig)  # see partner_reward_func

    def __post_init__(self):
        check_trl()
        if self.engine_mode not in ENGINE_MODES:
            raise TandemError(f"unknown engine_mode {self.engine_mode!r}; choose one of {', '.join(ENGINE_MODES)}")
        # what HF TRL runs of the partner reward and the junior update (tandem.trainers), before any model loads
        require_partner_reward("hf_trl", self.partner_reward)
        require("hf_trl", "junior_update_kinds", self.tandem.junior_update_rule.kind)
        self.engine, self.trainer, self.senior, self.scorer, self.book = None, None, None, None, None
        self.receiver = None  # kind=transfer: the receiver's solo engine
        self.last_stats, self.history = BatchStats(), []

    # --- binding to the trainer: every check, once, before the first generation ------------

    def check(self, trainer) -> None:
        """Bind to `trainer` and run every check now (else the first call does it)."""
        if self.trainer is trainer:
            return
        if self.trainer is not None:
            raise TandemError("this tandem rollout_func is bound to another trainer; build one per trainer")
        check_generation_settings(trainer)
        dataset = trainer.train_dataset
        if dataset is not None and "answer" in (getattr(dataset, "column_names", None) or ()):
            check_golds(dataset["answer"], "the training dataset's answer column")
        self.senior = reachable_senior(trainer)
        tokenizer = text_tokenizer(trainer)
        self.sampling = trainer_sampling(trainer.args, self.sampling)
        if self.partner_reward.writer_sees_solution:  # each training prompt's solution, read once
            self.book = SolutionBook(trainer.train_dataset, tokenizer)
        junior, junior_tokenizer = (None, None) if self.solo else self._junior(trainer, tokenizer)
        partner = self.partner_reward
        if partner.transfers and partner.transfer.receiver:  # RLTR's separate frozen receiver, checked as `train` does
            param = next(self.senior.parameters())
            self.scorer = load_receiver(partner.transfer.receiver, tokenizer,
                                        self.senior.get_input_embeddings().num_embeddings, param.device, param.dtype)
        elif partner.enabled:  # the junior scores a TRL run; a GRPO run's base scores it (RLT's setting)
            self.scorer = junior if junior is not None else self._base_copy(trainer)
        if partner.transfers:  # the receiver writes alone, on an engine of its own
            self.receiver = build_backend("engine", self.scorer, None, self.tandem, tokenizer=tokenizer,
                                          mode=self.engine_mode)
        # the reference engine checks the pair (one vocabulary, a supported architecture) in one line each.
        self.engine = build_backend("engine", self.senior, junior, self.tandem, tokenizer=tokenizer,
                                    junior_tokenizer=junior_tokenizer, mode=self.engine_mode)
        self.trainer = trainer

    def _junior(self, trainer, tokenizer):
        junior, junior_tokenizer = self.junior, self.junior_tokenizer
        rule = self.tandem.junior_update_rule
        if not rule.frozen and (junior is not None or self.tandem.junior_model):
            raise TandemError(f"tandem.junior_update={rule.text} makes the junior follow the senior, so the junior is "
                              "the senior's own copy; pass no junior= and no tandem.junior_model, or junior_update=frozen")
        if junior is None and self.tandem.junior_model:
            junior = self.tandem.junior_model
        if junior is None:
            if trainer.state.global_step > 0 and rule.frozen:
                raise TandemError(
                    "the default junior is a copy of the senior before training, but this trainer is at step "
                    f"{trainer.state.global_step}; pass junior= the pre-RL base when resuming"
                )
            junior = copy.deepcopy(self.senior)
        elif isinstance(junior, str):
            param = next(self.senior.parameters())
            junior_tokenizer = junior_tokenizer or load_tokenizer(junior)
            junior = load_model(junior, dtype=param.dtype, device=param.device)
        if junior_tokenizer is not None:
            check_same_vocab(tokenizer, junior_tokenizer)
        junior.eval()
        junior.requires_grad_(False)
        if not rule.frozen:
            updater = JuniorUpdater(rule, junior, self.senior)
            trainer.add_callback(updater)
            if trainer.state.global_step > 0:  # bound mid-run (the first generation of a resumed run)
                updater.resume(trainer.args, trainer.state)
        return junior, junior_tokenizer

    def _base_copy(self, trainer):
        if trainer.state.global_step > 0:
            raise TandemError("the partner score of a solo run scores with a copy of the senior before training, but "
                              f"this trainer is at step {trainer.state.global_step}; start the run with the score on")
        base = copy.deepcopy(self.senior).eval()
        return base.requires_grad_(False)

    # --- one generation batch ------------------------------------------------------------

    def __call__(self, prompts: list, trainer) -> dict:
        self.check(trainer)
        mode = "train" if trainer.model.training else "eval"
        solo = self.solo or (mode == "eval" and self.solo_eval)
        plain_ids = tokenize_prompts(trainer, prompts)
        # The writer who sees the solution writes training batches only: evaluation asks the deployed question.
        writes_solution = self.book is not None and mode == "train"
        prompt_ids = self.book.writer_prompt_ids(prompts) if writes_solution else plain_ids
        step = trainer.state.global_step
        keys = self.request_keys(plain_ids, mode, step, trainer.accelerator.process_index)
        with torch.no_grad():
            rollouts = self.engine.generate(prompt_ids, self.sampling, keys, solo=solo,
                                            junior_logprobs=self.partner_reward.enabled and not solo
                                            and not self.partner_reward.transfers)
        self._log(trainer, rollouts, mode, step)
        out = {
            "prompt_ids": [r.prompt_ids for r in rollouts],  # what the writer read: TRL's loss is conditioned on it
            "completion_ids": [r.token_ids for r in rollouts],
            "logprobs": [r.senior_logprobs for r in rollouts],
            "env_mask": [r.authorship_mask for r in rollouts],
            SENIOR_FRACTION_FIELD: [r.senior_token_fraction for r in rollouts],
        }
        if self.partner_reward.enabled:  # what partner_reward_func reads back, row by row
            out["tandem_rollout"] = rollouts
        if self.book is not None:  # the scorer reads the plain prompt, never the writer's
            out["plain_prompt_ids"] = plain_ids
        return out

    def partner_reward_func(self, verifier: Callable[[str, str], float] = grade_reward):
        """A TRL reward function: `partner_reward.weight` times the partner score (`tandem.rewards.partner_score`), or
        under `kind=transfer` times R_transfer (`tandem.rewards.transfer_reward`, each continuation graded by `verifier`,
        the project's grader unless given; pass the one the run rewards with).

        Pass it beside the verifier's (`reward_funcs=[grader_reward, rollout.partner_reward_func()]`):
        TRL sums them, so each row's reward is verifier + weight * score. The gold is the
        dataset's `answer` or `solution` column (`partner_reward.target`); the unweighted score
        and each term are logged as `partner_score` and `partner_score/<term>`, and the seconds
        the score took as `time_partner` (as the embedded trainer logs it). Under `kind=transfer`
        the step's `transfer/*` metrics (the receiver's accuracy and tokens, the cut fractions
        asked and used, ...) and `time_partner` are logged instead.
        """
        if self.partner_reward.transfers:
            return transfer_reward_function(self, verifier)
        return partner_reward_function(self)

    @staticmethod
    def request_keys(prompt_ids: list[list[int]], mode: str, step: int, process: int) -> list[int]:
        """One key per row: (mode, step, prompt ids) and the row's sample number for that prompt.

        The sample number counts earlier rows of the same prompt, offset by the process index
        times the batch size, so the `num_generations` copies of a prompt get distinct keys
        wherever TRL placed them.
        """
        seen: dict[tuple, int] = {}
        keys = []
        for ids in prompt_ids:
            t = tuple(ids)
            sample = seen.get(t, 0)
            seen[t] = sample + 1
            prompt = f"trl/{mode}/{step}/" + ",".join(map(str, ids))
            keys.append(request_key(prompt, process * len(prompt_ids) + sample))
        return keys

    def _log(self, trainer, rollouts, mode: str, step: int) -> None:
        local = stats_of_masks([r.authorship_mask for r in rollouts]).as_tensor(trainer.accelerator.device)
        total = trainer.accelerator.reduce(local, reduction="sum") if trainer.accelerator.num_processes > 1 else local
        stats = RolloutStats.from_tensor(total.cpu())
        shared = stats.metrics()
        self.last_stats = BatchStats(step, mode, shared[SENIOR_TOKEN_FRACTION], shared[MEAN_HANDOFFS],
                                     int(stats.responses))
        self.history.append(self.last_stats)
        metrics = getattr(trainer, "_metrics", None)  # TRL averages these into its logs (wandb, console)
        if metrics is not None:
            for name, value in stats.metrics(prefix=TANDEM_PREFIX).items():
                metrics[mode][name].append(value)


def tandem_rollout_func(junior=None, tandem_config: TandemConfig | None = None, sampling: SamplingConfig | None = None,
                        junior_tokenizer=None, engine_mode: str = "auto", solo_eval: bool = True,
                        solo: bool = False, partner_reward: PartnerRewardConfig | None = None) -> TandemRolloutFunc:
    """A `rollout_func` for `trl.GRPOTrainer` that co-writes every response with a frozen junior.

    junior: a model, a model path (loaded on the senior's device and dtype), or None for a
    frozen copy of the senior before its first update (or `tandem_config.junior_model`).
    sampling: None takes temperature, top_p, top_k, max_completion_length and seed from
    the trainer's `GRPOConfig`; a given one must use the trainer's temperature.
    solo=True: the senior writes every response (the GRPO baseline with the same engine,
    request keys and sampling uniforms); `env_mask` is then all ones.
    partner_reward: a `partner_reward` section of weight > 0 makes `partner_reward_func()` the
    partner score's reward function (scored by the junior; with solo=True by the base). With
    `writer_sees_solution=True` (and target "solution") training batches are written from the
    question and its solution; the training dataset then needs a `solution` column. With
    `kind="transfer"` it is RLTR's transfer reward (the receiver: `transfer.receiver`, the
    junior, or with solo=True the base).
    """
    return TandemRolloutFunc(junior=junior, tandem=tandem_config or TandemConfig(), sampling=sampling,
                             junior_tokenizer=junior_tokenizer, engine_mode=engine_mode, solo_eval=solo_eval,
                             solo=solo, partner_reward=partner_reward or PartnerRewardConfig())
