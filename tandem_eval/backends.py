"""Generation backends for the evaluations: the reference engine and vLLM.

Both expose `solo(prompts, keys)` and `handoff(prompts, keys)` returning one
`tandem_eval.handoff.Sample` per prompt, under one `EvalSampling`.

- `engine` (CPU or one GPU): `tandem.engine.TandemEngine`. Solo is `solo=True`; the handoff
  is the engine's own `step` strategy with the senior first, so the tandem process is
  never re-implemented here. Pairs with different vocabularies (only with
  `allow_vocab_mismatch`) use the turn loop of `tandem_eval.handoff` with re-tokenisation.
- `vllm` (CUDA only): one `vllm.LLM` per model on the same card, each at
  `gpu_memory_utilization` (default 0.42 for two, 0.85 for one). The handoff alternates
  `LLM.generate` calls on `TokensPrompt(prompt_token_ids=...)` with `stop=["\\n\\n"]`,
  `include_stop_str_in_output=True` and a per-request `max_tokens` equal to the budget left.
  NOT YET RUN ON A GPU: written against vLLM's documented API, untested here.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from tqdm.auto import tqdm

from tandem.errors import TandemError
from tandem_eval.handoff import STEP_BREAK, Sample, Step, run_step_handoff

BACKENDS = ("engine", "vllm")
VLLM_MISSING = "vLLM backend needs a CUDA GPU and `pip install tandem-rlvr[vllm]`; use --backend engine on CPU"


@dataclass
class EvalSampling:
    """The paper's evaluation sampling; every output records these values."""

    temperature: float = 0.7
    top_p: float = 0.8
    top_k: int = 20  # 0 = off
    max_new_tokens: int = 3000
    seed: int = 0

    def __post_init__(self):
        from tandem.sampling import check_sampling_values  # imports torch; keep --help light

        check_sampling_values(self, name=lambda field: "--" + field.replace("_", "-"))

    def record(self) -> dict:
        return asdict(self)


def _load_pair(senior_path, junior_path, device, dtype, allow_vocab_mismatch):
    from tandem.models import check_same_vocab, load_model, load_tokenizer

    tokenizer = load_tokenizer(senior_path)
    senior = load_model(senior_path, dtype=dtype, device=device)
    if junior_path is None:
        return tokenizer, senior, None, None, True
    junior_tokenizer = load_tokenizer(junior_path)
    try:
        check_same_vocab(tokenizer, junior_tokenizer)
        same = True
    except TandemError as e:
        if not allow_vocab_mismatch:
            raise TandemError(f"{e}; or pass --allow-vocab-mismatch to re-tokenise every handoff") from None
        same = False
    return tokenizer, senior, load_model(junior_path, dtype=dtype, device=device), junior_tokenizer, same


class _EngineStepWriter:
    """One model writing one step per call through the engine in solo mode (mismatch path)."""

    def __init__(self, model, tokenizer, sampling: EvalSampling):
        from tandem.engine import TandemEngine

        self.engine, self.tokenizer, self.sampling = TandemEngine(model, None, tokenizer), tokenizer, sampling

    def write_steps(self, contexts, max_tokens, keys) -> list[Step]:
        from tandem.sampling import SamplingConfig

        out: list[Step | None] = [None] * len(contexts)
        groups: dict[int, list[int]] = {}
        for i, cap in enumerate(max_tokens):  # the engine takes one cap per call
            groups.setdefault(cap, []).append(i)
        for cap, rows in groups.items():
            s = self.sampling
            cfg = SamplingConfig(temperature=s.temperature, top_p=s.top_p, top_k=s.top_k, max_new_tokens=cap,
                                 stop_strings=(STEP_BREAK,), seed=s.seed)
            rollouts = self.engine.generate([contexts[i] for i in rows], cfg, [keys[i] for i in rows], solo=True)
            for i, r in zip(rows, rollouts):
                text = self.tokenizer.decode(r.token_ids, skip_special_tokens=True)
                ended = "length" if r.finish_reason == "length" else ("step" if STEP_BREAK in text else "eos")
                out[i] = Step(r.token_ids, text, ended)
        return out


class EngineBackend:
    """The reference engine (`tandem.engine`), on CPU or one GPU."""

    name = "engine"

    def __init__(self, senior_path, junior_path=None, sampling: EvalSampling | None = None, device="cpu",
                 dtype="float32", batch_size: int = 64, allow_vocab_mismatch: bool = False):
        if batch_size < 1:
            raise TandemError(f"--batch-size must be >= 1, got {batch_size}")
        self.sampling, self.batch_size = sampling or EvalSampling(), batch_size
        (self.tokenizer, self.senior, self.junior, self.junior_tokenizer,
         self.same_vocab) = _load_pair(senior_path, junior_path, device, dtype, allow_vocab_mismatch)

    def _config(self):
        from tandem.sampling import SamplingConfig

        s = self.sampling
        return SamplingConfig(temperature=s.temperature, top_p=s.top_p, top_k=s.top_k,
                              max_new_tokens=s.max_new_tokens, seed=s.seed)

    def _batched(self, engine, prompts, keys, solo: bool, desc: str) -> list[Sample]:
        out = []
        bar = tqdm(total=len(prompts), desc=desc, unit="sample")
        for i in range(0, len(prompts), self.batch_size):
            chunk, chunk_keys = prompts[i : i + self.batch_size], keys[i : i + self.batch_size]
            for r in engine.generate(chunk, self._config(), chunk_keys, solo=solo):
                out.append(Sample(r.token_ids, r.authorship_mask, r.text, r.finish_reason))
            bar.update(len(chunk))
        bar.close()
        return out

    def solo(self, prompts: list[list[int]], keys: list[int]) -> list[Sample]:
        from tandem.engine import TandemEngine

        return self._batched(TandemEngine(self.senior, None, self.tokenizer), prompts, keys, True, "solo")

    def handoff(self, prompts: list[list[int]], keys: list[int], prompt_texts: list[str] | None = None) -> list[Sample]:
        from tandem.config import TandemConfig
        from tandem.engine import TandemEngine

        if self.junior is None:
            raise TandemError("the handoff needs a junior model; pass --junior")
        if self.same_vocab:
            tandem = TandemConfig(selection_strategy="step", first_author="senior")
            engine = TandemEngine(self.senior, self.junior, self.tokenizer, tandem=tandem)
            return self._batched(engine, prompts, keys, False, "handoff")
        if prompt_texts is None:
            raise TandemError("re-tokenising handoff needs the prompt texts")
        senior = _EngineStepWriter(self.senior, self.tokenizer, self.sampling)
        junior = _EngineStepWriter(self.junior, self.junior_tokenizer, self.sampling)
        junior_ids = [list(self.junior_tokenizer(t, add_special_tokens=False)["input_ids"]) for t in prompt_texts]
        return run_step_handoff(senior, junior, prompts, prompt_texts, keys, self.sampling.max_new_tokens,
                                retokenize=True, junior_prompt_ids=junior_ids)


def _import_vllm():
    try:
        import torch

        if not torch.cuda.is_available():
            raise ImportError("no CUDA device")
        import vllm
        from vllm.inputs import TokensPrompt
    except ImportError:
        raise TandemError(VLLM_MISSING) from None
    return vllm, TokensPrompt


class _VLLMStepWriter:
    def __init__(self, llm, tokenizer, sampling: EvalSampling, vllm, tokens_prompt):
        self.llm, self.tokenizer, self.sampling, self.vllm, self.TokensPrompt = llm, tokenizer, sampling, vllm, tokens_prompt

    def params(self, max_tokens: int, key: int, stop: list[str] | None):
        s = self.sampling
        return self.vllm.SamplingParams(
            temperature=s.temperature, top_p=s.top_p, top_k=s.top_k if s.top_k > 0 else -1,
            max_tokens=max_tokens, seed=(s.seed * 1_000_003 + key) % (1 << 31),
            stop=stop, include_stop_str_in_output=bool(stop), skip_special_tokens=True,
        )

    def generate(self, contexts, max_tokens, keys, stop=None):
        prompts = [self.TokensPrompt(prompt_token_ids=list(c)) for c in contexts]
        params = [self.params(m, k, stop) for m, k in zip(max_tokens, keys)]
        return [o.outputs[0] for o in self.llm.generate(prompts, params, use_tqdm=False)]

    def write_steps(self, contexts, max_tokens, keys) -> list[Step]:
        steps = []
        for out in self.generate(contexts, max_tokens, keys, stop=[STEP_BREAK]):
            if out.finish_reason == "length":
                ended = "length"
            else:  # stop_reason is the matched stop string, or None for an EOS token
                ended = "step" if out.stop_reason == STEP_BREAK else "eos"
            steps.append(Step(list(out.token_ids), out.text, ended))
        return steps


class VLLMBackend:
    """vLLM on one CUDA GPU (not yet run on a GPU in this project)."""

    name = "vllm"

    def __init__(self, senior_path, junior_path=None, sampling: EvalSampling | None = None,
                 gpu_memory_utilization: float | None = None, max_model_len: int | None = None,
                 allow_vocab_mismatch: bool = False, dtype: str = "auto"):
        vllm, tokens_prompt = _import_vllm()
        from tandem.models import check_same_vocab, load_tokenizer

        self.sampling = sampling or EvalSampling()
        self.tokenizer = load_tokenizer(senior_path)
        util = gpu_memory_utilization or (0.42 if junior_path else 0.85)
        kwargs = dict(gpu_memory_utilization=util, dtype=dtype, seed=self.sampling.seed, enable_prefix_caching=True)
        if max_model_len:
            kwargs["max_model_len"] = max_model_len
        self.senior = _VLLMStepWriter(vllm.LLM(model=str(senior_path), **kwargs), self.tokenizer, self.sampling,
                                      vllm, tokens_prompt)
        self.junior, self.same_vocab = None, True
        if junior_path is not None:
            junior_tokenizer = load_tokenizer(junior_path)
            try:
                check_same_vocab(self.tokenizer, junior_tokenizer)
            except TandemError as e:
                if not allow_vocab_mismatch:
                    raise TandemError(f"{e}; or pass --allow-vocab-mismatch to re-tokenise every handoff") from None
                self.same_vocab = False
            self.junior = _VLLMStepWriter(vllm.LLM(model=str(junior_path), **kwargs), junior_tokenizer,
                                          self.sampling, vllm, tokens_prompt)

    def solo(self, prompts: list[list[int]], keys: list[int]) -> list[Sample]:
        outs = self.senior.generate(prompts, [self.sampling.max_new_tokens] * len(prompts), keys)
        return [Sample(list(o.token_ids), [1] * len(o.token_ids), o.text,
                       "length" if o.finish_reason == "length" else "stop") for o in outs]

    def handoff(self, prompts: list[list[int]], keys: list[int], prompt_texts: list[str] | None = None) -> list[Sample]:
        if self.junior is None:
            raise TandemError("the handoff needs a junior model; pass --junior")
        texts = prompt_texts or [self.tokenizer.decode(p) for p in prompts]
        junior_ids = None
        if not self.same_vocab:
            junior_ids = [list(self.junior.tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
        return run_step_handoff(self.senior, self.junior, prompts, texts, keys, self.sampling.max_new_tokens,
                                retokenize=not self.same_vocab, junior_prompt_ids=junior_ids)


def make_backend(kind: str, senior_path, junior_path=None, sampling: EvalSampling | None = None, device: str = "cpu",
                 dtype: str = "auto", batch_size: int = 64, allow_vocab_mismatch: bool = False,
                 gpu_memory_utilization: float | None = None):
    """`dtype="auto"`: float32 on CPU and bfloat16 on GPU for the engine; the checkpoint's for vLLM."""
    if kind == "engine":
        if dtype == "auto":
            dtype = "float32" if str(device) == "cpu" else "bfloat16"
        return EngineBackend(senior_path, junior_path, sampling, device, dtype, batch_size, allow_vocab_mismatch)
    if kind == "vllm":
        return VLLMBackend(senior_path, junior_path, sampling, gpu_memory_utilization,
                           allow_vocab_mismatch=allow_vocab_mismatch, dtype=dtype)
    raise TandemError(f"unknown backend {kind!r}; choose one of {', '.join(BACKENDS)}")
