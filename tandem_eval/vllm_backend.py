"""The evaluation's vLLM backend (GPU, or vLLM's CPU build).

- **solo**: the senior in its own `vllm.LLM`.
- **handoff**, same vocabulary (the paper's pairs), two routes that hand over at the same
  token as the reference engine:
  - `two-engine` (default): one `vllm.LLM` per model taking turns (`tandem_eval.handoff`);
    each turn stops at the first token of the tokenizer's step set (ids whose text
    contains a blank line), the set the `step` strategy switches on. Each model decodes
    only its own steps and re-reads (prefix-cached) the other's at every turn.
  - `tandem`: one tandem vLLM engine (`vllm_source`) holding senior and junior, with the
    reference engine's own definition (`TandemConfig(selection_strategy="step",
    first_author="senior")`); the authorship mask is replayed by `tandem.process`. Both
    models run on every token.
  `tandem_eval/README.md` has the measurements behind the default.
- **handoff**, different vocabularies (`allow_vocab_mismatch`): the two-engine turn loop
  on text, stopping at the string `\\n\\n` and re-tokenising the history for each model.

Every response's text is decoded from its token ids with the senior's tokenizer (as the
reference engine does), so both backends grade the same strings.
"""

from __future__ import annotations

from tandem.errors import TandemError
from tandem_eval.handoff import STEP_BREAK, Sample, Step, run_step_handoff

HANDOFF_ROUTES = ("two-engine", "tandem")
DEFAULT_HANDOFF_ROUTE = "two-engine"  # measured faster on CPU (tandem_eval/README.md)


def _finish(reason: str | None) -> str:
    return "length" if reason == "length" else "stop"


class _VLLMStepWriter:
    """One model writing one step per call (the turn loop's writer)."""

    def __init__(self, llm, tokenizer, sampling, vllm, step_ids: list[int] | None):
        self.llm, self.tokenizer, self.sampling, self.vllm = llm, tokenizer, sampling, vllm
        self.step_ids = step_ids  # None: stop at the string STEP_BREAK (re-tokenising loop)

    def params(self, max_tokens: int, key: int, stop_steps: bool):
        s = self.sampling
        stops = {}
        if stop_steps:
            stops = ({"stop_token_ids": self.step_ids} if self.step_ids is not None
                     else {"stop": [STEP_BREAK], "include_stop_str_in_output": True})
        return self.vllm.SamplingParams(
            temperature=s.temperature, top_p=s.top_p, top_k=s.top_k if s.top_k > 0 else -1,
            max_tokens=max_tokens, seed=(s.seed * 1_000_003 + key) % (1 << 31), skip_special_tokens=True, **stops,
        )

    def generate(self, contexts, max_tokens, keys, stop_steps=False):
        prompts = [{"prompt_token_ids": list(c)} for c in contexts]
        params = [self.params(m, k, stop_steps) for m, k in zip(max_tokens, keys)]
        return [o.outputs[0] for o in self.llm.generate(prompts, params, use_tqdm=False)]

    def write_steps(self, contexts, max_tokens, keys) -> list[Step]:
        steps = []
        for out in self.generate(contexts, max_tokens, keys, stop_steps=True):
            ids = list(out.token_ids)
            if out.finish_reason == "length":
                ended = "length"
            elif self.step_ids is not None:  # stop_reason: the stop token id, or None for an EOS token
                ended = "step" if out.stop_reason in self.step_ids else "eos"
            else:  # stop_reason: the matched stop string, or None for an EOS token
                ended = "step" if out.stop_reason == STEP_BREAK else "eos"
            steps.append(Step(ids, self.tokenizer.decode(ids, skip_special_tokens=True), ended))
        return steps


class VLLMBackend:
    """vLLM on one GPU or on the CPU; engines are built on first use."""

    name = "vllm"

    def __init__(self, senior_path, junior_path=None, sampling=None, gpu_memory_utilization: float | None = None,
                 max_model_len: int | None = None, allow_vocab_mismatch: bool = False, dtype: str = "auto",
                 handoff_route: str = DEFAULT_HANDOFF_ROUTE):
        from vllm_source.runtime import require_vllm

        from tandem.models import check_same_vocab, load_tokenizer
        from tandem_eval.backends import EvalSampling

        if handoff_route not in HANDOFF_ROUTES:
            raise TandemError(f"unknown handoff route {handoff_route!r}; choose one of {', '.join(HANDOFF_ROUTES)}")
        self.vllm = require_vllm(device=True)
        self.sampling, self.route = sampling or EvalSampling(), handoff_route
        self.senior_path, self.junior_path = str(senior_path), junior_path and str(junior_path)
        self.tokenizer = load_tokenizer(senior_path)
        self.junior_tokenizer, self.same_vocab = None, True
        if junior_path is not None:
            self.junior_tokenizer = load_tokenizer(junior_path)
            try:
                check_same_vocab(self.tokenizer, self.junior_tokenizer)
            except TandemError as e:
                if not allow_vocab_mismatch:
                    raise TandemError(f"{e}; or pass --allow-vocab-mismatch to re-tokenise every handoff") from None
                self.same_vocab = False
        self.llm_kwargs = dict(dtype=dtype, seed=self.sampling.seed, enable_prefix_caching=True)
        if max_model_len:
            self.llm_kwargs["max_model_len"] = max_model_len
        self.memory = gpu_memory_utilization
        self._engines: dict[str, object] = {}

    def _engine(self, which: str):
        """'senior' / 'junior' (plain engines) or 'tandem' (both models, step strategy); built once."""
        if which not in self._engines:
            kwargs = dict(self.llm_kwargs)
            if self.vllm_on_gpu():
                kwargs["gpu_memory_utilization"] = self.memory or (0.42 if self.junior_path else 0.85)
            else:  # on CPU, torch.compile costs more start-up than it saves on an evaluation
                kwargs["enforce_eager"] = True
            if which == "tandem":
                from vllm_source.engine import make_llm

                kwargs.pop("enable_prefix_caching")
                self._engines[which] = make_llm(self.handoff_config(), self.senior_path, **kwargs)
            else:
                from vllm_source.compat import engine_defaults

                path = self.senior_path if which == "senior" else self.junior_path
                self._engines[which] = self.vllm.LLM(model=path, **{**engine_defaults(), **kwargs})
        return self._engines[which]

    @staticmethod
    def vllm_on_gpu() -> bool:
        from vllm_source.runtime import vllm_platform

        return vllm_platform() != "cpu"

    def handoff_config(self):
        from tandem.config import TandemConfig

        return TandemConfig(selection_strategy="step", first_author="senior", junior_model=self.junior_path)

    def _seeds(self, keys: list[int]) -> list[int]:
        return [(self.sampling.seed * 1_000_003 + k) % (1 << 31) for k in keys]

    def _sampling_kwargs(self) -> dict:
        s = self.sampling
        return dict(temperature=s.temperature, top_p=s.top_p, top_k=s.top_k if s.top_k > 0 else -1,
                    max_tokens=s.max_new_tokens, skip_special_tokens=True)

    def _sample(self, token_ids, mask) -> Sample:
        return Sample(list(token_ids), list(mask), self.tokenizer.decode(token_ids, skip_special_tokens=True),
                      "stop")

    def solo(self, prompts: list[list[int]], keys: list[int]) -> list[Sample]:
        writer = _VLLMStepWriter(self._engine("senior"), self.tokenizer, self.sampling, self.vllm, None)
        outs = writer.generate(prompts, [self.sampling.max_new_tokens] * len(prompts), keys)
        samples = []
        for o in outs:
            sample = self._sample(o.token_ids, [1] * len(o.token_ids))
            sample.finish_reason = _finish(o.finish_reason)
            samples.append(sample)
        return samples

    def handoff(self, prompts: list[list[int]], keys: list[int], prompt_texts: list[str] | None = None) -> list[Sample]:
        if self.junior_path is None:
            raise TandemError("the handoff needs a junior model; pass --junior")
        if self.same_vocab and self.route == "tandem":
            return self._tandem_handoff(prompts, keys)
        return self._turn_loop_handoff(prompts, keys, prompt_texts)

    def _tandem_handoff(self, prompts, keys) -> list[Sample]:
        from vllm_source.engine import generate_keyed

        done = generate_keyed(self._engine("tandem"), self.handoff_config(), prompts, keys,
                              seeds=self._seeds(keys), **self._sampling_kwargs())
        samples = []
        for c in done:
            sample = self._sample(c.token_ids, c.authorship_mask)
            sample.finish_reason = _finish(c.finish_reason)
            samples.append(sample)
        return samples

    def _turn_loop_handoff(self, prompts, keys, prompt_texts) -> list[Sample]:
        from tandem.boundaries import boundary_ids

        step_ids = boundary_ids(self.tokenizer, "step") if self.same_vocab else None
        senior = _VLLMStepWriter(self._engine("senior"), self.tokenizer, self.sampling, self.vllm, step_ids)
        junior = _VLLMStepWriter(self._engine("junior"), self.junior_tokenizer, self.sampling, self.vllm, step_ids)
        texts = prompt_texts or [self.tokenizer.decode(p) for p in prompts]
        junior_ids = None
        if not self.same_vocab:
            junior_ids = [list(self.junior_tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
        return run_step_handoff(senior, junior, prompts, texts, keys, self.sampling.max_new_tokens,
                                retokenize=not self.same_vocab, junior_prompt_ids=junior_ids)
