"""The reference engine's builders (`tandem.reference.engine.TandemEngine`, CPU or one GPU): the 'engine' entry.

`build` makes one engine over paths or HF models already loaded. `build_role` makes a run's
role on the models `RoleBackends` loads once and shares: the team is one engine holding both
models with the run's tandem process (for the eval, the `step` strategy, senior first), so the
tandem process is never re-implemented here; 'senior' and 'junior' hold one model each.
"""

from __future__ import annotations

from pathlib import Path

def build(senior, junior=None, tandem=None, *, tokenizer=None, junior_tokenizer=None, dtype: str = "float32",
          device: str = "cpu", mode: str = "auto"):
    """A `TandemEngine` over `senior` and `junior`: paths, or loaded HF models (then `tokenizer` is required)."""
    from tandem.reference.engine import TandemEngine
    from tandem.models.loading import load_model, load_tokenizer

    def model(m):
        return load_model(m, dtype, device) if isinstance(m, (str, Path)) else m

    tokenizer = tokenizer or load_tokenizer(senior)
    if junior_tokenizer is None and isinstance(junior, (str, Path)):
        junior_tokenizer = load_tokenizer(junior)
    return TandemEngine(model(senior), None if junior is None else model(junior), tokenizer, tandem,
                        junior_tokenizer=junior_tokenizer, mode=mode)


def build_role(roles, role: str):
    """The engine of `role`, over the models `roles` (a `RoleBackends`) loaded, each once and shared by the roles.

    `roles` is not annotated: the registry imports this module and `RoleBackends` the registry.
    """
    mode, entry = roles.settings.mode, roles.entry
    if role == "team":
        return entry.build(roles.model("senior"), roles.model("junior"), roles.settings.tandem,
                           tokenizer=roles.tokenizer, junior_tokenizer=roles.junior_tokenizer, mode=mode)
    tokenizer = roles.tokenizer if role == "senior" else roles.junior_tokenizer
    return entry.build(roles.model(role), tokenizer=tokenizer, mode=mode)
