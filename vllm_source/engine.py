"""Offline tandem generation with `vllm.LLM`: build the engine, submit keyed requests,
and return each response with its authorship mask.

The mask is replayed from the response tokens, the config and the request key
(`requests.response_authorship_mask`); the engine's logits processor made the same
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
from tandem.process import request_key
from vllm_source.engine_config import tandem_engine_kwargs
from vllm_source.requests import response_authorship_mask, tandem_extra_args
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

    @property
    def senior_fraction(self) -> float:
        return sum(self.authorship_mask) / max(1, len(self.authorship_mask))


def make_llm(cfg: TandemConfig, senior_model: str, **llm_kwargs):
    """A `vllm.LLM` running the tandem process (junior = `cfg.junior_model` or the senior)."""
    vllm = require_vllm(device=True)
    from vllm_source.plugin import register

    register()  # this process; worker processes register through the entry point
    llm_kwargs.setdefault("logprobs_mode", "raw_logprobs")
    return vllm.LLM(**tandem_engine_kwargs(cfg, senior_model, **llm_kwargs))


def generate(
    llm, cfg: TandemConfig, prompts: list[list[int]], prompt_ids: list[str], n: int = 1, solo: bool = False, **sampling
) -> list[list[TandemCompletion]]:
    """Sample `n` responses per prompt (token-id prompts); one request, one key, per sample."""
    vllm = require_vllm(device=True)
    requests, params = [], []
    for prompt, pid in zip(prompts, prompt_ids, strict=True):
        for s in range(n):
            extra = tandem_extra_args(request_key(pid, s), solo=solo)
            requests.append({"prompt_token_ids": list(prompt)})
            params.append(vllm.SamplingParams(n=1, extra_args=extra, **sampling))
    outputs = llm.generate(requests, params)
    tokenizer = llm.get_tokenizer()
    is_boundary = config_boundary_lookup(cfg, tokenizer, llm.llm_engine.model_config.get_vocab_size())
    results, i = [], 0
    for pid in prompt_ids:
        row = []
        for s in range(n):
            out = outputs[i].outputs[0]
            i += 1
            tokens = list(out.token_ids)
            mask = response_authorship_mask(cfg, is_boundary, tokens, request_key(pid, s), solo)
            lps = [lp[t].logprob for lp, t in zip(out.logprobs, tokens, strict=True)] if out.logprobs else None
            row.append(TandemCompletion(pid, s, tokens, out.text, mask, lps))
        results.append(row)
    return results
