"""Offline tandem generation with `vllm.LLM`: build the engine, submit keyed requests,
and return each response with its authorship mask.

The mask is replayed from the response tokens, the config and the request key
(`tandem.process.response_authorship_mask`); the engine's logits processor made the same
decisions token by token with the same functions, so no per-token side channel out of
vLLM is needed. Log-probabilities: with `logprobs_mode="raw_logprobs"` (the default
here) vLLM reports, for every emitted token, the senior's log-probability at
temperature 1 (computed before the junior's rows are swapped in), junior-written tokens
included; `"processed_logprobs"` reports the author's (behaviour policy's) instead.
"""

from __future__ import annotations

from dataclasses import dataclass

from tandem.boundaries import config_boundary_lookup
from tandem.config import TandemConfig
from tandem.errors import TandemError
from tandem.coins import request_key
from tandem.process import response_authorship_mask
from vllm_source.compat import engine_defaults
from vllm_source.engine_config import tandem_engine_kwargs
from vllm_source.requests import tandem_extra_args
from vllm_source.runtime import require_vllm


@dataclass
class TandemCompletion:
    """One response: its tokens, text, authorship mask (1 = senior) and per-token log-probs."""

    prompt_id: str
    sample: int
    token_ids: list[int]
    text: str
    authorship_mask: list[int]
    logprobs: list[float] | None
    finish_reason: str | None = None  # vLLM's: "stop" | "length" | "abort"
    request_key: int | None = None

    @property
    def senior_fraction(self) -> float:
        return sum(self.authorship_mask) / max(1, len(self.authorship_mask))


def make_llm(cfg: TandemConfig, senior_model: str, **llm_kwargs):
    """A `vllm.LLM` running the tandem process (junior = `cfg.junior_model` or the senior)."""
    vllm = require_vllm(device=True)
    from vllm_source.plugin import register

    register()  # this process; worker processes register through the entry point
    llm_kwargs.setdefault("logprobs_mode", "raw_logprobs")
    llm_kwargs = {**engine_defaults(), **llm_kwargs}
    return vllm.LLM(**tandem_engine_kwargs(cfg, senior_model, **llm_kwargs))


def generate(
    llm, cfg: TandemConfig, prompts: list[list[int]], prompt_ids: list[str], n: int = 1, solo: bool = False, **sampling
) -> list[list[TandemCompletion]]:
    """Sample `n` responses per prompt (token-id prompts); one request, one key, per sample."""
    keys = [request_key(pid, s) for pid in prompt_ids for s in range(n)]
    rows = [p for p in prompts for _ in range(n)]
    flat = generate_keyed(llm, cfg, rows, keys, solo=solo, **sampling)
    for i, c in enumerate(flat):
        c.prompt_id, c.sample = str(prompt_ids[i // n]), i % n
    return [flat[i : i + n] for i in range(0, len(flat), n)]


def generate_keyed(llm, cfg: TandemConfig, prompts: list[list[int]], keys: list[int], solo: bool = False,
                   seeds: list[int] | None = None, use_tqdm: bool = False, **sampling) -> list[TandemCompletion]:
    """One response per (prompt, request key): the key draws its coins; `seeds` (optional) its sampling."""
    vllm = require_vllm(device=True)
    if len(keys) != len(prompts) or (seeds is not None and len(seeds) != len(prompts)):
        raise TandemError(f"{len(prompts)} prompts need as many request keys (got {len(keys)}) and seeds")
    requests, params = [], []
    for i, (prompt, key) in enumerate(zip(prompts, keys)):
        extra = tandem_extra_args(key, solo=solo)
        seed = {"seed": seeds[i]} if seeds is not None else {}
        requests.append({"prompt_token_ids": list(prompt)})
        params.append(vllm.SamplingParams(n=1, extra_args=extra, **seed, **sampling))
    outputs = llm.generate(requests, params, use_tqdm=use_tqdm)
    tokenizer = llm.get_tokenizer()
    is_boundary = None if solo else config_boundary_lookup(cfg, tokenizer, llm.llm_engine.model_config.get_vocab_size())
    results = []
    for key, output in zip(keys, outputs):
        out = output.outputs[0]
        tokens = list(out.token_ids)
        mask = response_authorship_mask(cfg, is_boundary, tokens, key, solo)
        lps = [lp[t].logprob for lp, t in zip(out.logprobs, tokens, strict=True)] if out.logprobs else None
        results.append(TandemCompletion("", 0, tokens, out.text, mask, lps, out.finish_reason, key))
    return results
