"""The eval's generation: solo and handoff rollouts on a run's backends (`tandem_backends.roles`), batched.

`EvalBackend(settings, sampling)` is a run's `RoleBackends` (each role's backend built from the
typed `tandem_backends.settings.EngineSettings` on first use, by the backend's registry entry)
plus the two generations the evaluations call, one `Rollout` per prompt under one
`SamplingConfig` (the eval preset's, `tandem_eval.core.sampling.eval_sampling()`, by default): `solo(prompts, keys)` (the senior alone) and `handoff(prompts, keys, texts)`:

- on a backend whose team writes the handoff (the reference engine; vLLM with
  `--vllm-handoff tandem`): one engine holding both models with the `step` strategy, senior
  first (`handoff_config`), so the tandem process is never re-implemented here;
- else two engines taking turns that stop at the step tokens the `step` strategy switches on
  (vLLM's default, `--vllm-handoff two-engine`); `tandem_eval/README.md` has the measurements;
- pairs with different vocabularies (only with `allow_vocab_mismatch`) take turns on the
  text, re-tokenising the history for each model (`tandem_eval.core.handoff`).
"""

from __future__ import annotations

from dataclasses import replace

from tqdm.auto import tqdm

from tandem.errors import TandemError
from tandem_backends.roles import RoleBackends
from tandem_backends.settings import EngineSettings
from tandem_eval.core.handoff import run_step_handoff
from tandem.rollout.sampling import SamplingConfig
from tandem_eval.core.sampling import eval_sampling


class EvalBackend(RoleBackends):
    """A run's backends by role, and the solo and handoff generation on them; see the module docstring."""

    def __init__(self, settings: EngineSettings, sampling: SamplingConfig | None = None, progress: bool = True):
        super().__init__(settings)
        self.sampling, self.progress = sampling or eval_sampling(), progress

    def solo(self, prompts: list[list[int]], keys: list[int], max_new_tokens: int | None = None):
        """`max_new_tokens` replaces the sampling's response budget for this call (a per-prompt budget rule)."""
        return self._batched(self.backend("senior"), prompts, keys, solo=True, desc="solo",
                             sampling=self._sampling(max_new_tokens))

    def handoff(self, prompts: list[list[int]], keys: list[int], prompt_texts: list[str] | None = None,
                max_new_tokens: int | None = None):
        if self.settings.junior is None:
            raise TandemError("the handoff needs a junior model; pass --junior")
        sampling = self._sampling(max_new_tokens)
        if self.team_writes_handoff():
            return self._batched(self.backend("team"), prompts, keys, solo=False, desc="handoff", sampling=sampling)
        from tandem.process.boundaries import boundary_ids

        texts = prompt_texts or [self.tokenizer.decode(p) for p in prompts]
        junior_ids = None
        if not self.same_vocab:
            junior_ids = [list(self.junior_tokenizer(t, add_special_tokens=False)["input_ids"]) for t in texts]
        step_ids = boundary_ids(self.tokenizer, "step") if self.same_vocab else None
        return run_step_handoff(self.backend("senior"), self.backend("junior"), prompts, texts, keys,
                                sampling, step_ids, junior_prompt_ids=junior_ids)

    def team_writes_handoff(self) -> bool:
        """Whether the team's one engine writes the handoff (else the senior's and junior's take turns)."""
        two_engines = self.entry.capabilities.two_engine_handoff and self.settings.vllm_handoff == "two-engine"
        return self.same_vocab and not two_engines

    def _sampling(self, max_new_tokens: int | None):
        return self.sampling if max_new_tokens is None else replace(self.sampling, max_new_tokens=max_new_tokens)

    def _batched(self, backend, prompts, keys, solo: bool, desc: str, sampling):
        size = self.batch_size or len(prompts)
        out, bar = [], tqdm(total=len(prompts), desc=desc, unit="sample", disable=not self.progress)
        for i in range(0, len(prompts), size):
            out += backend.generate(prompts[i : i + size], sampling, keys[i : i + size], solo=solo)
            bar.update(min(size, len(prompts) - i))
        bar.close()
        return out
