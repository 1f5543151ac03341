"""What every run generates with: its rollout backends (`tandem.rollout`), one per role, built on first use.

`EvalBackend(settings, sampling)` takes a run's typed `EngineSettings`
(`tandem_eval.engine_settings`) and holds a backend per role, each built the first time it
is asked for (a run whose benchmarks are all done loads nothing): 'senior' and 'junior'
(one model each, generating solo) and 'team' (both models, the settings' tandem process).
The evaluations call `solo(prompts, keys)` and `handoff(prompts, keys, texts)`, one
`Rollout` per prompt under one `EvalSampling`; `tandem-rlvr rollout` asks for a role's
backend and calls the rollout protocol on it. Every backend comes from `rollout_backend`:

- `engine` (CPU or one GPU): `tandem.engine.TandemEngine`. Solo is the senior's engine;
  the handoff is the team: one engine holding both models with the `step` strategy,
  senior first (`handoff_config`), so the tandem process is never re-implemented here.
- `vllm` (a GPU, or vLLM's CPU build): `vllm_source.engine.VLLMEngine`. Solo is the
  senior's engine; the handoff is two engines taking turns that stop at the step tokens
  the `step` strategy switches on (`--vllm-handoff two-engine`, default), or the team's
  tandem vLLM engine (`--vllm-handoff tandem`). `tandem_eval/README.md` has the measurements.
- Pairs with different vocabularies (only with `allow_vocab_mismatch`) take turns on the
  text, re-tokenising the history for each model (`tandem_eval.handoff`).
"""

from __future__ import annotations

from dataclasses import replace
from functools import cached_property

from tqdm.auto import tqdm

from tandem.errors import TandemError
from tandem.threads import apply_threads
from tandem_eval.engine_settings import BACKENDS, EngineSettings
from tandem_eval.handoff import run_step_handoff
from tandem_eval.sampling import EvalSampling

ROLES = ("senior", "junior", "team")


def rollout_backend(kind: str, senior, junior=None, tandem=None, *, tokenizer=None, junior_tokenizer=None,
                    dtype: str = "float32", device: str = "cpu", mode: str = "auto", **vllm_kwargs):
    """The one place a rollout backend (`tandem.rollout.RolloutBackend`) is built from its settings.

    `kind` 'engine': the reference engine over `senior` and `junior` (paths, or HF models
    already loaded; `tokenizer` is then required); `dtype`, `device` and `mode` are its own.
    `kind` 'vllm': a vLLM engine over the paths; `dtype` and `vllm_kwargs` go to `vllm.LLM`.
    Without a junior the backend holds the senior alone and generates solo. `tandem` is the
    process (None: `TandemConfig()`); the junior it names is `junior`.
    """
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


class EvalBackend:
    """A run's backends by role, and the solo and handoff generation on them; see the module docstring."""

    def __init__(self, settings: EngineSettings, sampling: EvalSampling | None = None, progress: bool = True):
        self.settings, self.sampling, self.progress = settings, sampling or EvalSampling(), progress
        self.name = settings.backend
        self.batch_size = settings.batch_size if settings.backend == "engine" else None
        self._models: dict[str, object] = {}
        self._backends: dict[str, object] = {}
        self._checked = False

    # --- the tokenizers and the vocabulary check, on first use -----------------------------

    @cached_property
    def tokenizer(self):
        """The senior's tokenizer (prompts and outputs are in its vocabulary)."""
        from tandem.models import load_tokenizer

        return load_tokenizer(self.settings.senior)

    @cached_property
    def junior_tokenizer(self):
        from tandem.models import load_tokenizer

        return None if self.settings.junior is None else load_tokenizer(self.settings.junior)

    @cached_property
    def same_vocab(self) -> bool:
        """Whether both models share one vocabulary; a mismatch is refused unless the settings allow it."""
        from tandem.models import check_same_vocab

        if self.settings.junior is None:
            return True
        try:
            check_same_vocab(self.tokenizer, self.junior_tokenizer)
        except TandemError as e:
            if not self.settings.allow_vocab_mismatch:
                raise TandemError(f"{e}; or pass --allow-vocab-mismatch to re-tokenise every handoff") from None
            return False
        return True

    def check_models(self) -> None:
        """Refuse, before any model loads, a pair whose tokens one of them cannot read.

        Each model's embedding has a row for every id of its tokenizer, and a pair sharing one
        vocabulary has one embedding size (each reads every token the other writes); else an
        IndexError mid-generation, after the run's files were begun. Read from the tokenizers and
        configs only; checked once, by `backend` before it builds one and by the eval tools before
        they take their folder.
        """
        if self._checked:
            return
        from tandem.models import check_partner_rows, check_tokenizer_rows

        s = self.settings
        senior_rows = check_tokenizer_rows(s.senior, self.tokenizer, "senior")
        if s.junior is not None:
            junior_rows = check_tokenizer_rows(s.junior, self.junior_tokenizer, "junior")
            if self.same_vocab:
                check_partner_rows(senior_rows, junior_rows, f"--junior {s.junior}")
        self._checked = True

    # --- the two evaluations ----------------------------------------------------------------

    def solo(self, prompts: list[list[int]], keys: list[int], max_new_tokens: int | None = None):
        """`max_new_tokens` replaces the sampling's response budget for this call (a per-prompt budget rule)."""
        return self._batched(self.backend("senior"), prompts, keys, solo=True, desc="solo",
                             sampling=self._sampling(max_new_tokens))

    def handoff(self, prompts: list[list[int]], keys: list[int], prompt_texts: list[str] | None = None,
                max_new_tokens: int | None = None):
        if self.settings.junior is None:
            raise TandemError("the handoff needs a junior model; pass --junior")
        sampling = self._sampling(max_new_tokens)
        if self.same_vocab and (self.settings.backend == "engine" or self.settings.vllm_handoff == "tandem"):
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
        config = self.sampling.config()
        return config if max_new_tokens is None else replace(config, max_new_tokens=max_new_tokens)

    def _batched(self, backend, prompts, keys, solo: bool, desc: str, sampling):
        size = self.batch_size or len(prompts)
        out, bar = [], tqdm(total=len(prompts), desc=desc, unit="sample", disable=not self.progress)
        for i in range(0, len(prompts), size):
            out += backend.generate(prompts[i : i + size], sampling, keys[i : i + size], solo=solo)
            bar.update(min(size, len(prompts) - i))
        bar.close()
        return out

    # --- backends, built on first use -------------------------------------------------------

    def backend(self, role: str):
        """'senior' or 'junior' (one model, solo) or 'team' (both models, the settings' tandem process)."""
        if role not in ROLES:
            raise TandemError(f"unknown backend role {role!r}; choose one of {', '.join(ROLES)}")
        if role != "senior" and self.settings.junior is None:
            raise TandemError(f"the {role} backend needs a junior model; pass --junior")
        if role not in self._backends:
            self.check_models()
            build = self._engine_backend if self.settings.backend == "engine" else self._vllm_backend
            self._backends[role] = build(role)
        return self._backends[role]

    def model(self, role: str):
        """The reference engine's HF model for 'senior' or 'junior' (loaded once, shared by its backends)."""
        from tandem.models import load_model

        if role not in self._models:
            if not self._models:  # before the first model: torch's threads for the pair's size
                apply_threads(self.settings.threads, [m for m in (self.settings.senior, self.settings.junior) if m])
            path = self.settings.senior if role == "senior" else self.settings.junior
            self._models[role] = load_model(path, dtype=self.settings.engine_dtype(), device=self.settings.device)
        return self._models[role]

    def _engine_backend(self, role: str):
        mode = self.settings.mode
        if role == "team":
            return rollout_backend("engine", self.model("senior"), self.model("junior"), self.settings.tandem,
                                   tokenizer=self.tokenizer, junior_tokenizer=self.junior_tokenizer, mode=mode)
        tokenizer = self.tokenizer if role == "senior" else self.junior_tokenizer
        return rollout_backend("engine", self.model(role), tokenizer=tokenizer, mode=mode)

    def _vllm_backend(self, role: str):
        from vllm_source.runtime import require_vllm, vllm_platform

        require_vllm(device=True)  # one clear line before any engine starts
        s = self.settings
        kwargs = dict(dtype=s.dtype, seed=s.seed)
        if s.max_model_len is not None:
            kwargs["max_model_len"] = s.max_model_len
        if vllm_platform() == "cpu":
            kwargs["enforce_eager"] = True  # on CPU, torch.compile costs more start-up than it saves here
        else:
            default = 0.85 if s.junior is None or role == "team" else 0.42
            kwargs["gpu_memory_utilization"] = s.gpu_memory_utilization or default
        if role == "team":
            return rollout_backend("vllm", s.senior, s.junior, s.tandem, **kwargs)
        path = s.senior if role == "senior" else s.junior
        return rollout_backend("vllm", path, enable_prefix_caching=True, **kwargs)
