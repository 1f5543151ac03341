"""`RoleBackends`: a run's rollout backends by role, each built from its `EngineSettings` on first use.

A run has up to three roles: 'senior' and 'junior' (one model each, generating solo) and 'team'
(both models, the settings' tandem process). Each is built the first time it is asked for (a
run whose work is all done loads nothing), by its backend's registry entry
(`tandem_backends.registry`: `build_role`), after the pair's tokens are checked. The reference
engine's roles share the HF models loaded here once (`model`).

`tandem-rlvr rollout` asks for one role and calls the rollout protocol on it; the eval's
`tandem_eval.core.backends.EvalBackend` adds the solo and handoff generation on top.
"""

from __future__ import annotations

from functools import cached_property

from tandem.errors import TandemError
from tandem.models.threads import apply_threads
from tandem_backends.registry import Backend, backend
from tandem_backends.settings import EngineSettings

ROLES = ("senior", "junior", "team")


class RoleBackends:
    """A run's backends by role; see the module docstring."""

    def __init__(self, settings: EngineSettings):
        self.settings = settings
        self.name = settings.backend
        # None: the backend schedules a whole call itself
        self.batch_size = None if self.entry.capabilities.schedules_batches else settings.batch_size
        self._models: dict[str, object] = {}
        self._backends: dict[str, object] = {}
        self._checked = False

    @property
    def entry(self) -> Backend:
        """The settings' registry entry (read on each use, so a test may swap an entry's builders)."""
        return backend(self.settings.backend)

    # --- the tokenizers and the vocabulary check, on first use -----------------------------

    @cached_property
    def tokenizer(self):
        """The senior's tokenizer (prompts and outputs are in its vocabulary)."""
        from tandem.models.loading import load_tokenizer

        return load_tokenizer(self.settings.senior)

    @cached_property
    def junior_tokenizer(self):
        from tandem.models.loading import load_tokenizer

        return None if self.settings.junior is None else load_tokenizer(self.settings.junior)

    @cached_property
    def same_vocab(self) -> bool:
        """Whether both models share one vocabulary; a mismatch is refused unless the settings allow it."""
        from tandem.models.loading import check_same_vocab

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
        from tandem.models.loading import check_partner_rows, check_tokenizer_rows

        s = self.settings
        senior_rows = check_tokenizer_rows(s.senior, self.tokenizer, "senior")
        if s.junior is not None:
            junior_rows = check_tokenizer_rows(s.junior, self.junior_tokenizer, "junior")
            if self.same_vocab:
                check_partner_rows(senior_rows, junior_rows, f"--junior {s.junior}")
        self._checked = True

    # --- backends, built on first use -------------------------------------------------------

    def backend(self, role: str):
        """'senior' or 'junior' (one model, solo) or 'team' (both models, the settings' tandem process)."""
        if role not in ROLES:
            raise TandemError(f"unknown backend role {role!r}; choose one of {', '.join(ROLES)}")
        if role != "senior" and self.settings.junior is None:
            raise TandemError(f"the {role} backend needs a junior model; pass --junior")
        if role not in self._backends:
            self.check_models()
            self._backends[role] = self.entry.build_role(self, role)
        return self._backends[role]

    def model(self, role: str):
        """The reference engine's HF model for 'senior' or 'junior' (loaded once, shared by its backends)."""
        from tandem.models.loading import load_model

        if role not in self._models:
            if not self._models:  # before the first model: torch's threads for the pair's size
                apply_threads(self.settings.threads, [m for m in (self.settings.senior, self.settings.junior) if m])
            path = self.settings.senior if role == "senior" else self.settings.junior
            self._models[role] = load_model(path, dtype=self.settings.engine_dtype(), device=self.settings.device)
        return self._models[role]
