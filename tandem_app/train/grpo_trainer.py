"""GRPO on the synthetic task, with solo (`grpo`) or tandem (`tandem`, alias `trl`) rollouts.

`GRPOTrainer` holds the models of a run and makes one step of it:
1. `rollout` (`rollout_batch.GroupSampler`): sample `group_size` responses for each of
   `prompts_per_step` problems, the senior alone (`grpo`) or with the junior (`tandem`,
   the paper's `selection_strategy=word, prob_senior=0.5, max_gap_tokens=32`), and score them.
2. `update` (`ppo_update.PPOUpdate`): GRPO advantages and the PPO update of the senior,
   every per-token term weighted by the senior gate.
With `partner_reward.writer_sees_solution` the training rollouts' writer reads each problem's
solution (RLT's teacher prompt, `data.writer_prompt_ids_batch`); validation does not.
`train` runs the steps in OUT (`grpo_run`): resume, validation, logs, checkpoints, summary.
The settings are `train_config.TrainConfig`.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable

import torch

from tandem.models.threads import apply_threads
from tandem.io import run_lock
from tandem.errors import TandemError
from tandem.grading import reward
from tandem.process.junior_update import check_self_paired
from tandem.io.metric_log import TIME_ROLLOUT, TIME_STEP, TIME_UPDATE, UPDATE_NAMES
from tandem.models.loading import check_partner_rows, check_same_vocab, load_model, load_tokenizer
from tandem_app.task import generate_problems
from tandem_app.train.data import prompt_ids_batch, writer_prompt_ids_batch
from tandem_app.train.evaluate import greedy_solo_accuracy
from tandem_app.train.grpo_run import run_grpo
from tandem_app.train.log_sinks import check_sinks
from tandem_app.train.ppo_update import PPOUpdate
from tandem_app.train.rollout_batch import GroupSampler, rollout_metrics
from tandem_app.train.train_config import TrainConfig
from tandem_backends.registry import build_backend


class GRPOTrainer:
    """Holds the senior, the junior (frozen unless tandem.junior_update), the base, the engine and the optimizer."""

    def __init__(self, cfg: TrainConfig, reward_fn: Callable[[str, str], float] = reward, progress: bool = True):
        if not cfg.model:
            raise TandemError("train needs model=DIR: the pre-RL base (e.g. OUT/model of `tandem-rlvr sft`)")
        if not cfg.out:
            raise TandemError("train needs out=DIR (or --out DIR), the run directory")
        run_lock.check_out_path(cfg.out)
        check_sinks(cfg)  # a logger's missing package: refused before any folder or model
        self.cfg, self.reward_fn, self.progress = cfg, reward_fn, progress
        apply_threads(cfg.threads, [cfg.model, *([cfg.tandem.junior_model] if cfg.tandem.junior_model else [])])
        torch.manual_seed(cfg.seed)
        self.tokenizer = load_tokenizer(cfg.model)
        self.senior = load_model(cfg.model, device=cfg.device)
        self.senior.requires_grad_(True)
        self._load_partners()
        self.engine = build_backend("engine", self.senior, self.junior, cfg.tandem, tokenizer=self.tokenizer,
                                    mode=cfg.engine_mode)
        self.opt = torch.optim.AdamW(
            self.senior.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(0.9, 0.999)
        )
        self.train_problems = generate_problems("train", cfg.n_train_problems, cfg.seed, cfg.task)
        self.train_prompts = prompt_ids_batch(self.tokenizer, self.train_problems)
        # RLT's teacher input for training rollouts; validation keeps the plain prompt (the model deployed).
        self.writer_prompts = (writer_prompt_ids_batch(self.tokenizer, self.train_problems)
                               if cfg.partner_reward.writer_sees_solution else None)
        self.val_problems = generate_problems("validation", cfg.n_val_problems, cfg.seed, cfg.task)
        self.sampling = cfg.sampling
        self._sample = GroupSampler(cfg, self.engine, self.senior, self.tokenizer, self.train_problems,
                                    self.train_prompts, reward_fn, scorer=self._scorer(),
                                    writer_prompts=self.writer_prompts)
        self._update = PPOUpdate(cfg, self.senior, self.opt, self.tokenizer, base=self.base, junior=self.junior,
                                 junior_update=self.junior_update)

    def _load_partners(self) -> None:
        """The frozen base (KL reference, GRPO's partner scorer) and the junior, in eval mode.

        The junior is the base unless tandem.junior_model names another model of the same
        vocabulary; a junior that follows the senior (tandem.junior_update) is a copy of the
        base of its own, so the base stays the KL reference. A GRPO run has no junior.
        """
        cfg = self.cfg
        needs_base = cfg.is_tandem or cfg.loss.use_kl_loss or cfg.partner_reward.enabled
        self.base = load_model(cfg.model, device=cfg.device) if needs_base else None
        self.junior_update = cfg.tandem.junior_update_rule if cfg.is_tandem else None
        self.junior = None
        if not cfg.is_tandem:
            return
        check_self_paired(self.junior_update, cfg.model, cfg.tandem.junior_model)
        other = cfg.tandem.junior_model and cfg.tandem.junior_model != cfg.model
        self.junior = load_model(cfg.tandem.junior_model, device=cfg.device) if other else self.base
        if other:
            check_same_vocab(self.tokenizer, load_tokenizer(cfg.tandem.junior_model))
            rows = [m.get_input_embeddings().num_embeddings for m in (self.senior, self.junior)]
            check_partner_rows(*rows, f"tandem.junior_model {cfg.tandem.junior_model}")
        if not self.junior_update.frozen:
            self.junior = copy.deepcopy(self.base)

    def _scorer(self):
        """The partner score's student: `partner_reward.student` where set (RLT's student, a model apart from
        the writer's start), else the junior (TRL) or the frozen base (GRPO)."""
        student = self.cfg.partner_reward.student
        if not self.cfg.partner_reward.enabled:
            return None
        if not student:
            return self.junior if self.cfg.is_tandem else self.base
        if self.cfg.is_tandem:
            raise TandemError("partner_reward.student scores a GRPO run's writer (RLT's setting); a TRL run is scored "
                              "by its junior: set tandem.junior_model instead, or partner_reward.student=''")
        check_same_vocab(self.tokenizer, load_tokenizer(student))
        scorer = load_model(student, device=self.cfg.device)
        check_partner_rows(self.senior.get_input_embeddings().num_embeddings,
                           scorer.get_input_embeddings().num_embeddings, f"partner_reward.student {student}")
        return scorer.eval().requires_grad_(False)

    @property
    def updating_junior(self):
        """The junior whose weights a checkpoint keeps: one that follows the senior, else None."""
        return None if self.junior_update is None or self.junior_update.frozen else self.junior

    def rollout(self, step: int) -> dict:
        """Sample the step's groups and score them; returns the batch (CPU tensors + lists)."""
        return self._sample(step)

    def update(self, batch: dict, step: int) -> dict:
        """GRPO advantages and the PPO update(s) of the senior on one batch."""
        return self._update(batch, step)

    def step(self, step: int) -> dict:
        """One rollout and one update; the step's metrics under the run log's names."""
        t0 = time.time()
        batch = self.rollout(step)
        t1 = time.time()
        m = self.update(batch, step)
        t2 = time.time()
        return {
            **rollout_metrics(batch, self.cfg.group_size),
            **{UPDATE_NAMES.get(k, k): v for k, v in m.items()},
            TIME_ROLLOUT: t1 - t0,
            TIME_UPDATE: t2 - t1,
            TIME_STEP: t2 - t0,
        }

    def validate(self) -> float:
        return greedy_solo_accuracy(self.senior, self.tokenizer, self.val_problems, self.cfg.sampling.max_new_tokens)

    def train(self, resume: bool = False, trust_unverified: bool = False) -> dict:
        """Run (or continue) to `cfg.steps` holding OUT's lock; checkpoint, log, save OUT/model and the summary."""
        return run_grpo(self, resume, trust_unverified)
