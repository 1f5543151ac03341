"""What the evaluations generate with: rollout backends (`tandem.rollout`) for solo and handoff.

`make_backend(kind, senior, junior, sampling, ...)` returns an `EvalBackend` whose
`solo(prompts, keys)` and `handoff(prompts, keys, texts)` return one `Rollout` per prompt
under one `EvalSampling`. Underneath, every generation is a call of the rollout protocol
on a backend built on first use:

- `engine` (CPU or one GPU): `tandem.engine.TandemEngine`. Solo is the senior's engine;
  the handoff is one engine holding both models with the `step` strategy, senior first
  (`handoff_config`), so the tandem process is never re-implemented here.
- `vllm` (a GPU, or vLLM's CPU build): `vllm_source.engine.VLLMEngine`. Solo is the
  senior's engine; the handoff is two engines taking turns that stop at the step tokens
  the `step` strategy switches on (`--vllm-handoff two-engine`, default), or one tandem
  vLLM engine (`--vllm-handoff tandem`). `tandem_eval/README.md` has the measurements.
- Pairs with different vocabularies (only with `allow_vocab_mismatch`) take turns on the
  text, re-tokenising the history for each model (`tandem_eval.handoff`).
"""

from __future__ import annotations

from dataclasses import dataclass

from tqdm.auto import tqdm

from tandem.errors import TandemError
from tandem_eval.handoff import run_step_handoff
from tandem_eval.sampling import EvalSampling

BACKENDS = ("engine", "vllm")
HANDOFF_ROUTES = ("two-engine", "tandem")


def rollout_backend(kind: str, senior, junior=None, tandem=None, *, tokenizer=None, junior_tokenizer=None,
                    dtype: str = "float32", device: str = "cpu", mode: str = "auto", **vllm_kwargs):
    """The one place a rollout backend (`tandem.rollout.RolloutBackend`) is built from its settings.

    `kind` 'engine': the reference engine over `senior` and `junior` (paths, or HF models
    already loaded; `tokenizer` is then required); `dtype`, `device` and `mode` are its own.
    `kind` 'vllm': a vLLM engine over the paths; `dtype` and `vllm_kwargs` go to `vllm.LLM`.
    Without a junior the backend holds the senior alone and generates solo. `tandem` is the
    process (None: `TandemConfig()`); the junior it names is `junior`.
    """
    from dataclasses import replace
    from pathlib import Path

    from tandem.config import TandemConfig

    if kind not in BACKENDS:
        raise TandemError(f"unknown backend {kind!r}; choose one of {', '.join(BACKENDS)}")
    if kind == "vllm":
        from vllm_source.engine import VLLMEngine

        cfg = None if junior is None else replace(tandem or TandemConfig(), junior_model=str(junior))
        return VLLMEngine(str(senior), cfg, dtype=dtype, **vllm_kwargs)
    from tandem.engine import TandemEngine
    from tandem.models import load_model, load_tokenizer

    def model(m):
        return load_model(m, dtype, device) if isinstance(m, (str, Path)) else m

    tokenizer = tokenizer or load_tokenizer(senior)
    if junior_tokenizer is None and isinstance(junior, (str, Path)):
        junior_tokenizer = load_tokenizer(junior)
    return TandemEngine(model(senior), None if junior is None else model(junior), tokenizer, tandem,
                        junior_tokenizer=junior_tokenizer, mode=mode)


def handoff_config(junior_path=None):
    """The handoff, exactly: the author changes after every step token, the senior first."""
    from tandem.config import TandemConfig

    return TandemConfig(selection_strategy="step", first_author="senior",
                        junior_model=None if junior_path is None else str(junior_path))


@dataclass
class _Spec:
    """How to build the backends of one evaluation (they are built on first use)."""

    kind: str
    senior_path: str
    junior_path: str | None
    device: str = "cpu"
    dtype: str = "auto"
    gpu_memory_utilization: float | None = None
    handoff_route: str = "two-engine"
    max_model_len: int | None = None  # vllm: the engines' context (None = the model's own)


class EvalBackend:
    """Solo and handoff generation for one evaluation; see the module docstring."""

    def __init__(self, spec: _Spec, sampling: EvalSampling, batch_size: int | None, allow_vocab_mismatch: bool):
        from tandem.models import check_same_vocab, load_tokenizer

        self.spec, self.sampling, self.batch_size = spec, sampling, batch_size
        self.name = spec.kind
        self.tokenizer = load_tokenizer(spec.senior_path)
        self.junior_tokenizer, self.same_vocab = None, True
        if spec.junior_path is not None:
            self.junior_tokenizer = load_tokenizer(spec.junior_path)
            try:
                check_same_vocab(self.tokenizer, self.junior_tokenizer)
            except TandemError as e:
                if not allow_vocab_mismatch:
                    raise TandemError(f"{e}; or pass --allow-vocab-mismatch to re-tokenise every handoff") from None
                self.same_vocab = False
        self._models: dict[str, object] = {}
        self._backends: dict[str, object] = {}

    # --- the two evaluations ----------------------------------------------------------------

    def solo(self, prompts: list[list[int]], keys: list[int], max_new_tokens: int | None = None):
        """`max_new_tokens` replaces the sampling's response budget for this call (a per-prompt budget rule)."""
        return self._batched(self.backend("senior"), prompts, keys, solo=True, desc="solo",
                             sampling=self._sampling(max_new_tokens))

    def handoff(self, prompts: list[list[int]], keys: list[int], prompt_texts: list[str] | None = None,
                max_new_tokens: int | None = None):
        if self.spec.junior_path is None:
            raise TandemError("the handoff needs a junior model; pass --junior")
        sampling = self._sampling(max_new_tokens)
        if self.same_vocab and (self.spec.kind == "engine" or self.spec.handoff_route == "tandem"):
            return self._batched(self.backend("team"), prompts, keys, solo=False, desc="handoff", sampling=sampling)
        from tandem.boundaries import boundary_ids

        texts = prompt_texts or [self.tokenizer.decode(p) for p in prompts]
        junior_ids = None
        if not self.same_vocab:
            junior_ids = [list(self.junior_tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
        step_ids = boundary_ids(self.tokenizer, "step") if self.same_vocab else None
        return run_step_handoff(self.backend("senior"), self.backend("junior"), prompts, texts, keys,
                                sampling, step_ids, junior_prompt_ids=junior_ids)

    def _sampling(self, max_new_tokens: int | None):
        from dataclasses import replace

        config = self.sampling.config()
        return config if max_new_tokens is None else replace(config, max_new_tokens=max_new_tokens)

    def _batched(self, backend, prompts, keys, solo: bool, desc: str, sampling):
        size = self.batch_size or len(prompts)
        out, bar = [], tqdm(total=len(prompts), desc=desc, unit="sample")
        for i in range(0, len(prompts), size):
            out += backend.generate(prompts[i : i + size], sampling, keys[i : i + size], solo=solo)
            bar.update(min(size, len(prompts) - i))
        bar.close()
        return out

    # --- backends, built on first use -------------------------------------------------------

    def backend(self, role: str):
        """'senior' or 'junior' (one model, solo) or 'team' (both models, the handoff strategy)."""
        if role not in self._backends:
            build = self._engine_backend if self.spec.kind == "engine" else self._vllm_backend
            self._backends[role] = build(role)
        return self._backends[role]

    def model(self, role: str):
        """The reference engine's HF model for 'senior' or 'junior' (loaded once, shared by its backends)."""
        from tandem.models import load_model

        if role not in self._models:
            path = self.spec.senior_path if role == "senior" else self.spec.junior_path
            self._models[role] = load_model(path, dtype=self._engine_dtype(), device=self.spec.device)
        return self._models[role]

    def _engine_dtype(self) -> str:
        if self.spec.dtype != "auto":
            return self.spec.dtype
        return "float32" if str(self.spec.device) == "cpu" else "bfloat16"

    def _engine_backend(self, role: str):
        if role == "team":
            return rollout_backend("engine", self.model("senior"), self.model("junior"), handoff_config(),
                                   tokenizer=self.tokenizer)
        tokenizer = self.tokenizer if role == "senior" else self.junior_tokenizer
        return rollout_backend("engine", self.model(role), tokenizer=tokenizer)

    def _vllm_backend(self, role: str):
        from vllm_source.runtime import vllm_platform

        kwargs = dict(dtype=self.spec.dtype, seed=self.sampling.seed)
        if self.spec.max_model_len is not None:
            kwargs["max_model_len"] = self.spec.max_model_len
        if vllm_platform() == "cpu":
            kwargs["enforce_eager"] = True  # on CPU, torch.compile costs more start-up than it saves here
        else:
            default = 0.85 if self.spec.junior_path is None or role == "team" else 0.42
            kwargs["gpu_memory_utilization"] = self.spec.gpu_memory_utilization or default
        if role == "team":
            return rollout_backend("vllm", self.spec.senior_path, self.spec.junior_path, handoff_config(), **kwargs)
        path = self.spec.senior_path if role == "senior" else self.spec.junior_path
        return rollout_backend("vllm", path, enable_prefix_caching=True, **kwargs)


def make_backend(kind: str, senior_path, junior_path=None, sampling: EvalSampling | None = None, device: str = "cpu",
                 dtype: str = "auto", batch_size: int = 64, allow_vocab_mismatch: bool = False,
                 gpu_memory_utilization: float | None = None, handoff_route: str = "two-engine",
                 max_model_len: int | None = None) -> EvalBackend:
    """`dtype="auto"`: float32 on CPU and bfloat16 on GPU for the engine; the checkpoint's for vLLM.

    `max_model_len` sets the vLLM engines' context (the paper preset's 4096, as the release's engines;
    a 262k-token default context may not fit two engines on one GPU)."""
    if kind not in BACKENDS:
        raise TandemError(f"unknown backend {kind!r}; choose one of {', '.join(BACKENDS)}")
    if handoff_route not in HANDOFF_ROUTES:
        raise TandemError(f"unknown handoff route {handoff_route!r}; choose one of {', '.join(HANDOFF_ROUTES)}")
    if batch_size < 1:
        raise TandemError(f"--batch-size must be >= 1, got {batch_size}")
    if kind == "vllm":
        from vllm_source.runner import pin_runner
        from vllm_source.runtime import require_vllm

        vllm = require_vllm(device=True)  # fail before any model is loaded
        pin_runner(vllm.__version__)  # solo and team engines on one model runner (vllm_source/runner.py)
    spec = _Spec(kind, str(senior_path), None if junior_path is None else str(junior_path), device, dtype,
                 gpu_memory_utilization, handoff_route, max_model_len)
    return EvalBackend(spec, sampling or EvalSampling(), batch_size if kind == "engine" else None,
                       allow_vocab_mismatch)
