"""`VLLMEngine`: a `vllm.LLM` behind the project's rollout protocol (`tandem.rollout.contract`).

Built with a `TandemConfig` it is the tandem engine (senior + junior in one vLLM model,
`TandemLogitsProcessor` choosing each token's author); built without one it is the
senior's own engine and generates solo only. `generate(prompts, sampling, request_keys,
solo)` takes the same `SamplingConfig` as the reference engine and returns the same
`Rollout`s:

- the authorship mask is replayed from the response tokens, the config and the request
  key (`tandem.process.authorship.response_authorship_mask`); the logits processor made the same
  decisions token by token with the same functions, so no side channel out of vLLM is
  needed;
- the text is decoded from the token ids with the senior's tokenizer, as the reference
  engine does, and cut before a matched stop string;
- each request's sampling seed comes from `(sampling.seed, request key)`, so a request
  samples the same way in any batch;
- `senior_logprobs`: with `logprobs_mode="raw_logprobs"` (the default here) vLLM reports,
  for every emitted token, the senior's log-probability at temperature 1 (computed before
  the junior's rows are swapped in), junior-written tokens included. The junior's are
  not reported.
"""

from __future__ import annotations

from tandem.process.boundaries import config_boundary_lookup
from tandem.process.config import TandemConfig
from tandem.errors import TandemError
from tandem.process.authorship import response_authorship_mask
from tandem.rollout.contract import Rollout, check_request_keys, cut_at_stop
from tandem.rollout.sampling import SamplingConfig
from vllm_source.compat import engine_defaults
from vllm_source.engine_config import tandem_engine_kwargs
from vllm_source.placement import check_pair_before_start
from vllm_source.requests import tandem_extra_args
from vllm_source.model_runner import EXTENSION, engine_runners, one_runner, pin_runner
from vllm_source.runtime import require_vllm


def make_llm(cfg: TandemConfig, senior_model: str, **llm_kwargs):
    """A `vllm.LLM` running the tandem process (junior = `cfg.junior_model` or the senior).

    Decodes on the model runner `pin_runner` pins for this vLLM (`compat.tandem_runner`).
    """
    vllm = require_vllm(device=True)
    runner = pin_runner(vllm.__version__)
    from vllm_source.plugin import register

    register()  # this process; worker processes register through the entry point
    llm_kwargs.setdefault("logprobs_mode", "raw_logprobs")
    check_pair_before_start(cfg.placement, senior_model, cfg.junior_model or senior_model,
                            llm_kwargs.get("max_model_len"), llm_kwargs.get("trust_remote_code", False))
    kwargs = tandem_engine_kwargs(cfg, senior_model, tandem_runner=runner, **{**engine_defaults(), **llm_kwargs})
    return vllm.LLM(**kwargs)


def request_seed(seed: int, key: int) -> int:
    """A request's vLLM sampling seed: a pure function of the run's seed and the request key."""
    return (seed * 1_000_003 + key) % (1 << 31)


def sampling_params(vllm, sampling: SamplingConfig, key: int, extra_args: dict | None):
    """vLLM's `SamplingParams` for one request under the project's `SamplingConfig`."""
    stop_ids = list(sampling.stop_token_ids)
    eos = {}
    if sampling.eos_token_ids is not None:  # exactly these ids end a response, not the model's own EOS
        eos = {"ignore_eos": True}
        stop_ids += list(sampling.eos_token_ids)
    return vllm.SamplingParams(
        n=1, temperature=sampling.temperature, top_p=sampling.top_p,
        top_k=sampling.top_k if sampling.top_k > 0 else -1, max_tokens=sampling.max_new_tokens,
        seed=request_seed(sampling.seed, key), stop=list(sampling.stop_strings) or None,
        stop_token_ids=stop_ids or None, logprobs=0, skip_special_tokens=True, extra_args=extra_args, **eos,
    )


class VLLMEngine:
    """The rollout protocol on vLLM; see the module docstring."""

    def __init__(self, senior_model: str, tandem: TandemConfig | None = None, **llm_kwargs):
        self.vllm = require_vllm(device=True)
        pin_runner(self.vllm.__version__)  # a solo engine decodes on the tandem engine's runner (vllm_source/model_runner.py)
        llm_kwargs.setdefault("worker_extension_cls", EXTENSION)  # so that model_runner() can ask the workers
        self.tandem = tandem
        if tandem is None:
            self.llm = self.vllm.LLM(model=str(senior_model), **{**engine_defaults(), **llm_kwargs})
        else:
            self.llm = make_llm(tandem, str(senior_model), **llm_kwargs)
        self.tokenizer = self.llm.get_tokenizer()
        self.is_boundary = None
        if tandem is not None:
            vocab = self.llm.llm_engine.model_config.get_vocab_size()
            self.is_boundary = config_boundary_lookup(tandem, self.tokenizer, vocab)

    def model_runner(self) -> dict:
        """The vLLM version and model runner this engine's workers decode on, read from the workers."""
        return one_runner(engine_runners(self.llm))

    def generate(self, prompts: list[list[int]], sampling: SamplingConfig, request_keys: list[int],
                 solo: bool = False, junior_solo: bool = False) -> list[Rollout]:
        """Team rollouts; `solo`: the senior writes every token; `junior_solo`: the junior does (the
        transfer reward's receiver, in this engine and its junior's KV cache)."""
        if (not solo or junior_solo) and self.tandem is None:
            raise TandemError("this vLLM engine holds the senior only; build it with a TandemConfig, or generate solo")
        check_request_keys(request_keys, prompts)
        params = [sampling_params(self.vllm, sampling, key, self._extra_args(key, solo, junior_solo))
                  for key in request_keys]
        outputs = self.llm.generate([{"prompt_token_ids": list(p)} for p in prompts], params, use_tqdm=False)
        return [self._rollout(prompt, key, out.outputs[0], sampling, solo, junior_solo)
                for prompt, key, out in zip(prompts, request_keys, outputs)]

    def _extra_args(self, key: int, solo: bool, junior_solo: bool = False) -> dict | None:
        return None if self.tandem is None else tandem_extra_args(key, solo=solo, junior_solo=junior_solo)

    def _rollout(self, prompt, key: int, out, sampling: SamplingConfig, solo: bool, junior_solo: bool = False
                 ) -> Rollout:
        tokens = list(out.token_ids)
        solo = solo or self.tandem is None
        mask = ([0] * len(tokens) if junior_solo
                else response_authorship_mask(self.tandem, self.is_boundary, tokens, key, solo))
        text = cut_at_stop(self.tokenizer.decode(tokens, skip_special_tokens=True), sampling.stop_strings,
                           out.finish_reason == "stop")
        logprobs = [lp[t].logprob for lp, t in zip(out.logprobs, tokens, strict=True)] if out.logprobs else None
        finish = "length" if out.finish_reason == "length" else "stop"
        if junior_solo:  # the sampled log-probs are the junior's
            return Rollout(list(prompt), tokens, mask, text, finish, key, junior_logprobs=logprobs)
        return Rollout(list(prompt), tokens, mask, text, finish, key, senior_logprobs=logprobs)
