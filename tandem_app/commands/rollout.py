"""`tandem-rlvr rollout`: co-generate responses with a senior and a junior (or solo).

The tandem and sampling flags set `TandemConfig` and `SamplingConfig` fields; their
defaults are the dataclasses' own (read here, never re-declared), and `--seed` keys the
coins and the sampling alike (model_spec/SPEC.md §4). Any other `TandemConfig` field is a
`tandem.KEY=VALUE` override, as `train` takes it, parsed by `tandem.io.config_files.load_config`
(an unknown key fails naming the nearest one); a flag that is given wins over an override
of the same field. The backend is built by the backends' floor (`tandem_backends.roles.RoleBackends`,
through the registry's entry for `--backend`) from the typed `EngineSettings` the flags give; what
the backend can do (the junior's log-probs, prompt checks) is asked of the registry, not its name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from tandem.process.config import AUTHORS, ENGINE_MODES, STRATEGIES, TandemConfig
from tandem.rollout.sampling import SamplingConfig
from tandem_app.commands.config_args import lazy_epilog
from tandem_backends.registry import NAMES as BACKENDS

# flag dest -> (config, field)
TANDEM_FLAGS = {"strategy": "selection_strategy", "prob_senior": "prob_senior", "max_gap_tokens": "max_gap_tokens",
                "chunk_size": "chunk_size", "first_author": "first_author"}
SAMPLING_FLAGS = ("temperature", "top_p", "top_k", "max_new_tokens")




@dataclass
class RolloutOverrides:
    """What a `key=value` override of `tandem-rlvr rollout` may set: the tandem process (`tandem.KEY=VALUE`)."""

    tandem: TandemConfig = field(default_factory=TandemConfig)


def _default(cls, name: str):
    return cls.__dataclass_fields__[name].default


def register(sub) -> None:
    p = sub.add_parser(
        "rollout",
        help="generate tandem (or solo) responses with the reference engine or vLLM",
        description="Each prompt gets --n responses co-written by the senior and the junior: before every "
        "token the tandem process picks its author, who samples it. Writes one JSON object per sample "
        "with prompt_id, sample, token_ids, authorship_mask (1 = senior), logprobs, text, finish_reason. "
        "Any TandemConfig field can be set as tandem.KEY=VALUE (e.g. tandem.placement=split); a flag given wins.",
    )
    lazy_epilog(p, _epilog)
    p.add_argument("overrides", nargs="*", metavar="tandem.KEY=VALUE",
                   help="TandemConfig overrides (a flag given for the same field wins)")
    p.add_argument("--backend", default="engine", choices=BACKENDS,
                   help="engine = the reference PyTorch engine (CPU or one GPU); vllm = the tandem vLLM engine "
                        "(a GPU, or vLLM's CPU build); the same tokens under greedy decoding (default: engine)")
    p.add_argument("--senior", required=True, help="senior model directory (HF format)")
    p.add_argument("--junior", help="junior model directory; must share the senior's vocabulary (not needed with --solo)")
    p.add_argument("--prompts", required=True, type=Path,
                   help='JSONL file, one {"id": ..., "prompt": ...} per line; the prompt is wrapped in the chat template')
    p.add_argument("--out", required=True, type=Path, help="output JSONL path")
    t, s = (lambda n: _default(TandemConfig, n)), (lambda n: _default(SamplingConfig, n))
    p.add_argument("--strategy", choices=STRATEGIES, help=f"selection strategy (default {t('selection_strategy')})")
    p.add_argument("--prob-senior", type=float, help=f"P(senior) at each coin redraw (default {t('prob_senior')})")
    p.add_argument("--max-gap-tokens", type=int,
                   help=f"word: redraw after at most this many tokens (default {t('max_gap_tokens')})")
    p.add_argument("--chunk-size", type=int,
                   help=f"chunk: toggle authors every this many tokens (default {t('chunk_size')})")
    p.add_argument("--first-author", choices=AUTHORS,
                   help=f"who starts, for the deterministic strategies (default {t('first_author')})")
    p.add_argument("--n", type=int, default=1, help="responses per prompt (default 1)")
    p.add_argument("--max-new-tokens", type=int, help=f"token budget per response (default {s('max_new_tokens')})")
    p.add_argument("--temperature", type=float,
                   help=f"sampling temperature; 0 = greedy (default {s('temperature')}; "
                        "the paper's training rollouts: 0.6)")
    p.add_argument("--top-p", type=float, help=f"nucleus sampling mass (default {s('top_p')} = off)")
    p.add_argument("--top-k", type=int, help=f"top-k sampling (default {s('top_k')} = off)")
    p.add_argument("--seed", type=int, help=f"keys both the authorship coins and token sampling (default {t('seed')}; "
                   "tandem.seed=S sets it too)")
    p.add_argument("--batch-size", type=int, default=64, help="requests decoded together (default 64)")
    p.add_argument("--mode", default="auto", choices=list(ENGINE_MODES),
                   help="engine: decoding mode, all giving the same tokens: auto (default: lazy for one prompt, else "
                        "paired), paired (one stacked forward for both models; lockstep when their configs differ), "
                        "lockstep, or lazy (only the author runs per token; fastest at batch 1)")
    p.add_argument("--device", default="cpu", help="engine: torch device (default cpu)")
    p.add_argument("--dtype", default="float32", help="model dtype: float32, bfloat16, float16, float64 (default float32)")
    p.add_argument("--solo", action="store_true", help="the senior writes alone (no junior)")
    p.add_argument("--junior-logprobs", action="store_true",
                   help="engine: also write the junior's log-probability of every token (junior_logprobs; null "
                        "otherwise). Lazy mode then runs the junior over the tokens it skipped")
    p.add_argument("--no-chat-template", action="store_true", help="feed the prompt text as is, without the chat template")
    p.set_defaults(func=run)


def encode_prompt(tokenizer, text: str, chat: bool) -> list[int]:
    if chat and getattr(tokenizer, "chat_template", None):
        out = tokenizer.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True)
        return list(out["input_ids"] if isinstance(out, dict) or hasattr(out, "keys") else out)
    return tokenizer(text)["input_ids"]


def tandem_config(args) -> TandemConfig:
    """The tandem process: its defaults, then the `tandem.KEY=VALUE` overrides, then the flags given."""
    from tandem.io.config_files import load_config

    flags = {f"tandem.{name}": getattr(args, k) for k, name in {**TANDEM_FLAGS, "seed": "seed"}.items()
             if getattr(args, k) is not None}
    return load_config(RolloutOverrides, None, list(args.overrides), flags=flags).tandem


def engine_settings(args, tandem: TandemConfig):
    """The `EngineSettings` the flags ask for (the team's process is `tandem`; `--solo` leaves the junior out)."""
    from tandem_backends.settings import EngineSettings

    return EngineSettings(args.senior, None if args.solo else args.junior, backend=args.backend, tandem=tandem,
                          seed=tandem.seed, device=args.device, dtype=args.dtype, mode=args.mode)


def _epilog() -> str:
    from tandem.io.config_files import describe_config

    return describe_config(RolloutOverrides)


def run(args) -> int:
    from tqdm.auto import tqdm

    from tandem.process.coins import request_key
    from tandem.errors import TandemError
    from tandem.io.jsonl import read_jsonl, write_jsonl
    from tandem.io.legacy import SENIOR_FRACTION_FIELD
    from tandem.models.loading import check_model_path
    from tandem.rollout.contract import stats_of_masks
    from tandem.io.metric_log import MEAN_HANDOFFS, SENIOR_TOKEN_FRACTION
    from tandem.io.strict import build
    from tandem_backends.registry import require
    from tandem_backends.roles import RoleBackends

    if not args.solo and not args.junior:
        raise TandemError("--junior is required unless --solo is given")
    for path in (args.senior, None if args.solo else args.junior):  # before any model is loaded
        if path:
            check_model_path(path)
    if args.junior_logprobs and args.solo:
        raise TandemError("--junior-logprobs needs a junior; leave out --solo")
    if args.junior_logprobs:
        require(args.backend, "junior_logprobs", "--junior-logprobs")
    if args.n < 1 or args.batch_size < 1:
        raise TandemError("--n and --batch-size must be >= 1")
    rows = read_jsonl(args.prompts, required=("id", "prompt"))
    if not rows:
        raise TandemError(f"{args.prompts} holds no prompts")
    tandem = tandem_config(args)
    given = {k: getattr(args, k) for k in SAMPLING_FLAGS if getattr(args, k) is not None}
    sampling = build(SamplingConfig, {**given, "seed": tandem.seed})
    roles = RoleBackends(engine_settings(args, tandem))
    tokenizer = roles.tokenizer
    backend = roles.backend("senior" if args.solo else "team")
    jobs = [(row, s) for row in rows for s in range(args.n)]
    encoded = {str(row["id"]): encode_prompt(tokenizer, str(row["prompt"]), not args.no_chat_template) for row in rows}
    if roles.entry.capabilities.prompt_checks:
        backend.check_prompts(list(encoded.values()), sampling)  # fail before any work is done
    results = []
    for i in tqdm(range(0, len(jobs), args.batch_size), desc="batches", unit="batch"):
        batch = jobs[i : i + args.batch_size]
        prompts = [encoded[str(row["id"])] for row, _ in batch]
        keys = [request_key(row["id"], s) for row, s in batch]
        extra = {"junior_logprobs": True} if args.junior_logprobs else {}
        for (row, s), r in zip(batch, backend.generate(prompts, sampling, keys, solo=args.solo, **extra)):
            results.append({
                "prompt_id": row["id"], "sample": s, "token_ids": r.token_ids,
                "authorship_mask": r.authorship_mask, "senior_logprobs": r.senior_logprobs,
                "junior_logprobs": r.junior_logprobs, "text": r.text, "finish_reason": r.finish_reason,
                SENIOR_FRACTION_FIELD: r.senior_token_fraction, "request_key": r.request_key,
            })
    write_jsonl(args.out, results)
    stats = stats_of_masks([r["authorship_mask"] for r in results]).metrics()
    print(f"wrote {len(results)} samples to {args.out}; senior token fraction {stats[SENIOR_TOKEN_FRACTION]:.3f}, "
          f"{stats[MEAN_HANDOFFS]:.1f} handoffs per response")
    return 0
