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
engine (`tandem.engine.TandemEngine`) over the trainer's live senior (the model TRL
trains, unwrapped as TRL unwraps it) and a frozen junior (by default a frozen copy of
the senior taken before the first update: the paper's self-paired junior; with
`tandem.junior_update` `sync:K` or `ema:BETA` that copy follows the senior after each
optimizer step, through `JuniorFollowsSenior`, and is saved in each checkpoint). Every row's
request key is `tandem.coins.request_key` of (mode, step, prompt ids) and the row's
sample number, so a rerun replays the same coins and tokens. It returns the authorship
mask as `env_mask` and the response's `senior_fraction` as an extra key; the batch's
senior token fraction is logged every step (the key `"tandem/senior_token_fraction"` in TRL's logs, and
`last_stats` here). Evaluation batches (`trainer.model.training` False) are written by
the senior alone unless `solo_eval=False`.

What is refused, in one line each before the first generation (`check(trainer)` runs the
checks right after the trainer is built): a TRL without `rollout_func` or `env_mask`;
TRL's vLLM mode (it builds its own single-model vLLM `LLM`, which cannot run the tandem
model: `trl/generation/vllm_generation.py`, `self.llm = LLM(model=model.name_or_path, ...)`
with no logits processor and no second model); a junior of another vocabulary;
`num_generations` not dividing the generation batch; a senior the rollout cannot read
(PEFT adapters, DeepSpeed ZeRO-3 or FSDP shards, a processor instead of a tokenizer, an
architecture the reference engine does not run).
"""

from __future__ import annotations

import copy
import inspect
import os
import time
from dataclasses import dataclass, field

import torch

from tandem.coins import request_key
from tandem.config import ENGINE_MODES, TandemConfig
from tandem.engine import TandemEngine
from tandem.errors import TandemError
from tandem.grading import reward as grade_reward
from tandem.grading.grader import reward_health
from tandem.grading.grader import stats as grader_stats
from tandem.junior_update import after_optimizer_step
from tandem.partner_score import METRIC as PARTNER_METRIC
from tandem.partner_score import PartnerRewardConfig, step_metrics
from tandem.partner_score import partner_rewards
from tandem.models import check_same_vocab, load_model, load_tokenizer
from tandem.rollout import MEAN_HANDOFFS, SENIOR_TOKEN_FRACTION, RolloutStats, stats_of_masks
from tandem.sampling import SamplingConfig

TRL_TESTED = "1.16.0"
METRIC_PREFIX = "tandem/"  # TRL's logs: tandem/senior_token_fraction, tandem/mean_handoffs, ...
SENIOR_FRACTION_METRIC = METRIC_PREFIX + SENIOR_TOKEN_FRACTION
HANDOFFS_METRIC = METRIC_PREFIX + MEAN_HANDOFFS


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


@dataclass
class BatchStats:
    """Authorship statistics of the last generation batch (all processes; `tandem.rollout.rollout_stats`)."""

    step: int = -1
    mode: str = "train"
    senior_fraction: float = float("nan")  # senior tokens / response tokens
    num_handoffs: float = float("nan")  # mean authorship changes per response
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
        self.engine, self.trainer, self.senior, self.scorer = None, None, None, None
        self.last_stats, self.history = BatchStats(), []

    # --- binding to the trainer: every check, once, before the first generation ------------

    def check(self, trainer) -> None:
        """Bind to `trainer` and run every check now (else the first call does it)."""
        if self.trainer is trainer:
            return
        if self.trainer is not None:
            raise TandemError("this tandem rollout_func is bound to another trainer; build one per trainer")
        args = trainer.args
        if getattr(args, "use_vllm", False):
            raise TandemError(
                "TRL's vLLM mode builds its own single-model vLLM engine that cannot co-write with a junior "
                "(trl/generation/vllm_generation.py: LLM(model=model.name_or_path, ...)); set use_vllm=False "
                "(the tandem rollout generates with the reference engine)"
            )
        world = trainer.accelerator.num_processes
        batch = args.per_device_train_batch_size * args.steps_per_generation * world
        if batch % trainer.num_generations != 0:
            raise TandemError(
                f"num_generations={trainer.num_generations} does not divide the generation batch of {batch} "
                "(per_device_train_batch_size * steps_per_generation * processes); make it a multiple"
            )
        self.senior = reachable_senior(trainer)
        tokenizer = getattr(trainer, "processing_class", None)
        if tokenizer is None or not hasattr(tokenizer, "get_vocab") or hasattr(tokenizer, "image_processor"):
            raise TandemError(
                "the tandem rollout needs a text tokenizer as the trainer's processing_class, not a processor"
            )
        self.sampling = trainer_sampling(args, self.sampling)
        junior, junior_tokenizer = (None, None) if self.solo else self._junior(trainer, tokenizer)
        if self.partner_reward.enabled:  # the junior scores a TRL run; a GRPO run's base scores it (RLT's setting)
            self.scorer = junior if junior is not None else self._base_copy(trainer)
        # TandemEngine checks the pair (one vocabulary, a supported architecture) in one line each.
        self.engine = TandemEngine(self.senior, junior, tokenizer, tandem=self.tandem,
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
            follow = JuniorFollowsSenior(rule, junior, self.senior)
            trainer.add_callback(follow)
            if trainer.state.global_step > 0:  # bound mid-run (the first generation of a resumed run)
                follow.restore(trainer.args, trainer.state)
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
        prompt_ids = tokenize_prompts(trainer, prompts)
        step = trainer.state.global_step
        keys = self.request_keys(prompt_ids, mode, step, trainer.accelerator.process_index)
        with torch.no_grad():
            rollouts = self.engine.generate(prompt_ids, self.sampling, keys, solo=solo,
                                            junior_logprobs=self.partner_reward.enabled and not solo)
        self._log(trainer, rollouts, mode, step)
        out = {
            "prompt_ids": [r.prompt_ids for r in rollouts],
            "completion_ids": [r.token_ids for r in rollouts],
            "logprobs": [r.senior_logprobs for r in rollouts],
            "env_mask": [r.authorship_mask for r in rollouts],
            "senior_fraction": [r.senior_fraction for r in rollouts],
        }
        if self.partner_reward.enabled:  # what partner_reward_func reads back, row by row
            out["tandem_rollout"] = rollouts
        return out

    def partner_reward_func(self):
        """A TRL reward function: `partner_reward.weight` times the partner score (`tandem.partner_score`).

        Pass it beside the verifier's (`reward_funcs=[grader_reward, rollout.partner_reward_func()]`):
        TRL sums them, so each row's reward is verifier + weight * score. The gold is the
        dataset's `answer` or `solution` column (`partner_reward.target`); the unweighted score
        and each term are logged as `partner_score` and `partner_score/<term>`, and the seconds
        the score took as `time_partner` (as the embedded trainer logs it).
        """
        cfg = self.partner_reward
        if not cfg.enabled:
            raise TandemError("partner_reward.weight is 0 (off); build the rollout with a PartnerRewardConfig of "
                              "weight > 0 to get its reward function")

        def partner_score(completions, tandem_rollout, log_metric=None, **columns) -> list[float]:
            t0 = time.perf_counter()
            golds = columns.get(cfg.target)
            if golds is None:
                raise TandemError(f"partner_reward.target={cfg.target} needs a '{cfg.target}' column in the dataset; "
                                  f"add it or set partner_reward.target={'answer' if cfg.target == 'solution' else 'solution'}")
            rollouts = list(tandem_rollout)
            co_wrote = all(r.junior_logprobs is not None for r in rollouts)
            score, terms = partner_rewards(cfg, self.scorer, self.engine.tokenizer, [r.prompt_ids for r in rollouts],
                                           rollouts, [str(g) for g in golds], self.sampling.logprob_temperature,
                                           scorer_wrote_with_engine=co_wrote)
            if log_metric is not None:
                for name, value in {**step_metrics(terms, score), "time_partner": time.perf_counter() - t0}.items():
                    log_metric(name, value)
            return (cfg.weight * score).tolist()

        partner_score.__name__ = PARTNER_METRIC  # TRL logs rewards/<name>/mean
        return partner_score

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
        logged = stats.metrics(prefix=METRIC_PREFIX)
        self.last_stats = BatchStats(step, mode, logged[SENIOR_FRACTION_METRIC], logged[HANDOFFS_METRIC],
                                     int(stats.responses))
        self.history.append(self.last_stats)
        metrics = getattr(trainer, "_metrics", None)  # TRL averages these into its logs (wandb, console)
        if metrics is not None:
            for name, value in logged.items():
                metrics[mode][name].append(value)


JUNIOR_FILE = "tandem_junior.pt"  # the following junior's weights, in each of TRL's checkpoint directories


def JuniorFollowsSenior(rule, junior, senior):
    """A `TrainerCallback` applying `tandem.junior_update` after each optimizer step and checkpointing the junior.

    TRL's `global_step` counts optimizer steps, as the rule does. A run resumed at step N > 0
    reads the junior back from `OUTPUT_DIR/checkpoint-N/tandem_junior.pt` before its first
    step (or when the callback is registered, if that is later).
    """
    from transformers import TrainerCallback

    class _Callback(TrainerCallback):
        def __init__(self):
            self.rule, self.junior, self.senior, self.restored = rule, junior, senior, False

        def restore(self, args, state) -> None:
            if self.restored:
                return
            self.restored = True
            if state.global_step == 0:
                return
            path = os.path.join(args.output_dir, f"checkpoint-{state.global_step}", JUNIOR_FILE)
            if not os.path.isfile(path):
                raise TandemError(f"resuming at step {state.global_step} with tandem.junior_update={self.rule.text}: "
                                  f"the junior's weights are not at {path}; resume from a checkpoint of this run")
            self.junior.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))

        def on_step_begin(self, args, state, control, **kwargs):
            self.restore(args, state)

        def on_step_end(self, args, state, control, **kwargs):
            after_optimizer_step(self.rule, self.junior, self.senior, state.global_step)

        def on_save(self, args, state, control, **kwargs):
            folder = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
            if state.is_world_process_zero and os.path.isdir(folder):
                tmp = os.path.join(folder, JUNIOR_FILE + ".tmp")
                torch.save(self.junior.state_dict(), tmp)
                os.replace(tmp, os.path.join(folder, JUNIOR_FILE))

    return _Callback()


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
    partner score's reward function (scored by the junior; with solo=True by the base).
    """
    return TandemRolloutFunc(junior=junior, tandem=tandem_config or TandemConfig(), sampling=sampling,
                             junior_tokenizer=junior_tokenizer, engine_mode=engine_mode, solo_eval=solo_eval,
                             solo=solo, partner_reward=partner_reward or PartnerRewardConfig())


# --- the pieces, each checked ------------------------------------------------------------


def reachable_senior(trainer):
    """The trainer's model as TRL unwraps it for generation, or a `TandemError` if its weights are out of reach."""
    if getattr(trainer, "is_fsdp_enabled", False):
        raise TandemError("the tandem rollout reads the senior's full weights, which FSDP shards; "
                          "train without FSDP (DDP via accelerate works)")
    if getattr(trainer, "is_deepspeed_enabled", False):
        plugin = trainer.accelerator.state.deepspeed_plugin
        if plugin is not None and getattr(plugin, "zero_stage", 0) == 3:
            raise TandemError("the tandem rollout reads the senior's full weights, which DeepSpeed ZeRO-3 shards; "
                              "use ZeRO stage 1 or 2, or DDP")
    wrapped = getattr(trainer, "model_wrapped", None) or trainer.model
    senior = trainer.accelerator.unwrap_model(wrapped)
    if hasattr(senior, "peft_config"):
        raise TandemError("the senior is a PEFT model; the reference engine reads the base weights and would ignore "
                          "the adapters; merge them (merge_and_unload) or train the full model")
    if not hasattr(senior, "model") or not hasattr(senior, "lm_head"):
        raise TandemError(f"cannot reach the senior's decoder inside {type(senior).__name__}; pass GRPOTrainer an "
                          "unwrapped Hugging Face causal LM (AutoModelForCausalLM)")
    return senior


def trainer_sampling(args, given: SamplingConfig | None) -> SamplingConfig:
    """The rollout's `SamplingConfig`: the GRPOConfig's, or `given` if it samples as TRL scores."""
    if args.repetition_penalty != 1.0 or args.min_p or args.generation_kwargs:
        raise TandemError("repetition_penalty, min_p and generation_kwargs are not honoured by the tandem rollout; "
                          "leave them at their defaults")
    if given is None:
        return SamplingConfig(temperature=args.temperature, top_p=args.top_p, top_k=args.top_k or 0,
                              max_new_tokens=args.max_completion_length, seed=args.seed)
    # TRL recomputes log-probs at args.temperature; sampling at another one would bias the gradient.
    if given.logprob_temperature != (args.temperature or 1.0):
        raise TandemError(f"sampling.temperature={given.temperature} but GRPOConfig.temperature={args.temperature}; "
                          "set them equal (TRL scores tokens at its temperature)")
    if given.max_new_tokens > args.max_completion_length:
        raise TandemError(f"sampling.max_new_tokens={given.max_new_tokens} exceeds GRPOConfig.max_completion_length="
                          f"{args.max_completion_length}; lower it or raise max_completion_length")
    return given


def tokenize_prompts(trainer, prompts: list) -> list[list[int]]:
    """Prompt token ids exactly as TRL's own generation path makes them (chat template or plain text)."""
    prompt_ids, images, _ = trainer._tokenize_prompts(prompts)
    if images is not None:
        raise TandemError("image prompts are not supported by the tandem rollout; use text prompts")
    return [list(map(int, ids)) for ids in prompt_ids]


def completion_text(completion) -> str:
    """The text of a TRL completion: a string, or a conversation whose last message is the assistant's."""
    if isinstance(completion, str):
        return completion
    return completion[-1]["content"]


def grader_reward(completions, answer, log_metric=None, **kwargs) -> list[float]:
    """TRL reward function: the project's grader (`tandem.grading.reward`) against the dataset's `answer` column.

    Through TRL's `log_metric` it logs the reward's health beside it each step
    (`grader_timeouts`, `grader_too_long`, `grader_errors`: `tandem.grading.grader.reward_health`).
    """
    before = grader_stats(this_thread=True)
    rewards = [grade_reward(completion_text(c), a) for c, a in zip(completions, answer)]
    if log_metric is not None:
        for name, value in reward_health(before).items():
            log_metric(name, value)
    return rewards
