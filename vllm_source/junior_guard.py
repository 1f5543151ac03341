"""`JuniorGuard`: the junior changes only on its schedule, never through weight syncs and sleeps.

Both tandem models (`model.py`, shared placement; `split.py`, split placement) hold one.
It takes each junior parameter's float32 sum at the first step after loading (after
vLLM's post-processing), checks the sums once per weight sync (a sync arrives as one
`load_weights` call per bucket), and, when vLLM's sleep mode is on, keeps a host copy
of the junior from which it restores what a level-2 sleep discarded
(`model_spec/SCALE.md`, "Sleep mode and the junior"). A junior that follows the senior
(`junior_update.py`) changes only through `rebase()`, which re-takes both.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from tandem.errors import TandemError
from vllm_source.weights import tensor_sums


class JuniorGuard:
    def __init__(self, params: Callable[[], list[torch.Tensor]], keep_host_copy: bool) -> None:
        self._params = params  # the junior's parameters, in a fixed order
        self._keep_host_copy = keep_host_copy
        self._fingerprint: torch.Tensor | None = None
        self._host: list[torch.Tensor] | None = None
        self._checked = True  # since the last step

    def loaded(self) -> None:
        """The junior's weights were (re)loaded: forget the old fingerprint and host copy."""
        self._fingerprint, self._host = None, None

    def on_step(self) -> None:
        """Called each step: the first step after loading takes the fingerprint (and host copy)."""
        if self._fingerprint is None:
            self._fingerprint = tensor_sums(self._params())
            if self._keep_host_copy and self._host is None:
                self.keep_host_copy()
        self._checked = False

    def on_sync(self) -> None:
        """Called per weight-sync bucket: the first bucket after a step checks the junior."""
        if self._checked or self._fingerprint is None:
            return
        self._checked = True
        self._check_or_restore()

    def rebase(self) -> None:
        """The junior was changed on its schedule (or restored from a checkpoint): fingerprint and host copy anew.

        The next sync checks the junior again even if no step ran in between (a sleep may come first).
        """
        self._fingerprint = tensor_sums(self._params())
        if self._keep_host_copy:
            self.keep_host_copy()
        self._checked = False

    def current(self) -> list[torch.Tensor]:
        """The junior's tensors on the host, to read (a checkpoint): the host copy itself where one is kept
        (a level-2 sleep may have discarded the device's; no second 8 GB copy), else copies of the parameters."""
        if self._host is not None:
            return list(self._host)
        return [p.detach().to("cpu", copy=True) for p in self._params()]

    def keep_host_copy(self) -> None:
        """Keep a host copy of the junior's weights (pinned where CUDA is), to restore after a level-2 sleep.

        A copy kept already is overwritten in place: a junior that follows the senior refreshes it
        after every update, without allocating (and pinning) a second one.
        """
        params = self._params()
        if self._host is not None and [h.shape for h in self._host] == [p.shape for p in params]:
            for h, p in zip(self._host, params):
                h.copy_(p)
            return
        pin = torch.cuda.is_available()
        self._host = [torch.empty(p.shape, dtype=p.dtype, device="cpu", pin_memory=pin).copy_(p) for p in params]

    def _check_or_restore(self) -> None:
        params = self._params()
        changed = (tensor_sums(params) != self._fingerprint).cpu()  # the one host sync of the check
        if not bool(changed.any()):
            return
        if self._host is None:
            raise TandemError(
                "the junior's weights changed during a weight sync (a level-2 vLLM sleep discards them) and no "
                "host copy was kept; enable vLLM's sleep mode (the host copy is kept then) or use sleep level 1"
            )
        for i in changed.nonzero().flatten().tolist():
            params[i].data.copy_(self._host[i], non_blocking=True)
        if bool((tensor_sums(params) != self._fingerprint).any()):
            raise TandemError("the junior's weights could not be restored from the host copy")
