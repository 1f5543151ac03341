"""Generation backends for the evaluations: the reference engine and vLLM.

Both expose `solo(prompts, keys)` and `handoff(prompts, keys)` returning one
`tandem_eval.handoff.Sample` per prompt, under one `EvalSampling`.

- `engine` (CPU or one GPU): `tandem.engine.TandemEngine`. Solo is `solo=True`; the handoff
  is the engine's own `step` strategy with the senior first, so the tandem process is
  never re-implemented here. Pairs with different vocabularies (only with
  `allow_vocab_mismatch`) use the turn loop of `tandem_eval.handoff` with re-tokenisation.
- `vllm` (a GPU, or vLLM's CPU build): `tandem_eval.vllm_backend`. Solo is the senior's
  own engine; the same-vocabulary handoff is two engines taking turns that stop at the
  step tokens the engine switches on (or, by choice, one tandem vLLM engine).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from tqdm.auto import tqdm

from tandem.errors import TandemError
from tandem_eval.handoff import STEP_BREAK, Sample, Step, run_step_handoff

BACKENDS = ("engine", "vllm")


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


def make_backend(kind: str, senior_path, junior_path=None, sampling: EvalSampling | None = None, device: str = "cpu",
                 dtype: str = "auto", batch_size: int = 64, allow_vocab_mismatch: bool = False,
                 gpu_memory_utilization: float | None = None, handoff_route: str = "two-engine"):
    """`dtype="auto"`: float32 on CPU and bfloat16 on GPU for the engine; the checkpoint's for vLLM."""
    if kind == "engine":
        if dtype == "auto":
            dtype = "float32" if str(device) == "cpu" else "bfloat16"
        return EngineBackend(senior_path, junior_path, sampling, device, dtype, batch_size, allow_vocab_mismatch)
    if kind == "vllm":
        from tandem_eval.vllm_backend import VLLMBackend

        return VLLMBackend(senior_path, junior_path, sampling, gpu_memory_utilization,
                           allow_vocab_mismatch=allow_vocab_mismatch, dtype=dtype, handoff_route=handoff_route)
    raise TandemError(f"unknown backend {kind!r}; choose one of {', '.join(BACKENDS)}")
