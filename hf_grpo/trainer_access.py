"""What the tandem rollout reads from TRL's `GRPOTrainer`, each read checked in one line.

The rollout generates with the project's reference engine over the model TRL trains, so it
needs that model's full weights (`reachable_senior`: no PEFT adapters, FSDP or ZeRO-3
shards), TRL's own sampling settings (`trainer_sampling`: TRL recomputes log-probs at its
temperature) and the prompt ids TRL's generation path would make (`tokenize_prompts`).
`check_generation_settings` and `text_tokenizer` refuse the settings the rollout cannot honour.
"""

from __future__ import annotations

from tandem.errors import TandemError
from tandem.rollout.sampling import SamplingConfig


def check_generation_settings(trainer) -> None:
    """Refuse TRL's vLLM mode and a generation batch that `num_generations` does not divide."""
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


def text_tokenizer(trainer):
    """The trainer's `processing_class`, refused unless it is a text tokenizer."""
    tokenizer = getattr(trainer, "processing_class", None)
    if tokenizer is None or not hasattr(tokenizer, "get_vocab") or hasattr(tokenizer, "image_processor"):
        raise TandemError(
            "the tandem rollout needs a text tokenizer as the trainer's processing_class, not a processor"
        )
    return tokenizer


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
