"""What a tandem request carries into vLLM, and the authorship mask of what came out.

A request names its replayable coin stream with a request key in
`SamplingParams.extra_args`; the engine's logits processor reads it there (it sees no
request id). Validation requests are marked *solo*: the senior writes every token, as in
the paper's evaluation of the senior. A request marked *junior solo* is written by the junior
alone: the transfer reward's receiver continuing a prefix (`tandem.rewards.transfer_reward`), in the
same engine, KV cache and placement as the team's rollouts. A user's request with neither is refused at admission (fail closed,
`check_tandem_params`); the model runner's own requests (vLLM's warm-up and profiling,
which never pass admission) carry neither and are solo (`is_vllm_own_request`). The mask of a
finished response is `tandem.process.authorship.response_authorship_mask`.
"""

from __future__ import annotations

from tandem.errors import TandemError

EXTRA_KEY = "tandem_request_key"  # int: keys the request's coins (tandem.process.coins.request_key)
EXTRA_SOLO = "tandem_solo"  # bool: the senior writes every token (validation)
EXTRA_JUNIOR_SOLO = "tandem_junior_solo"  # bool: the junior writes every token (the transfer reward's receiver)


class TandemRequestError(TandemError, ValueError):
    """A request the tandem engine cannot honour (vLLM expects ValueError from validate_params)."""


def tandem_extra_args(key: int | None, solo: bool = False, junior_solo: bool = False) -> dict:
    """The `extra_args` entries of one tandem request (merge them into any others)."""
    if solo and junior_solo:
        raise TandemRequestError("a request is solo (the senior writes) or junior solo, not both")
    if solo:
        return {EXTRA_SOLO: True}
    if junior_solo:
        return {EXTRA_JUNIOR_SOLO: True}
    if not isinstance(key, int) or key < 0:
        raise TandemRequestError(f"a tandem request needs a non-negative integer key, got {key!r}")
    return {EXTRA_KEY: key}


def parse_tandem_extra_args(extra_args: dict | None) -> tuple[int, bool]:
    """(request key, solo) from a request's `extra_args`; raises when neither is given.

    A junior-solo request (`is_junior_solo`) reads as (0, False): it is not the senior's, and
    no coin decides its author.
    """
    extra = extra_args or {}
    if extra.get(EXTRA_SOLO) and extra.get(EXTRA_JUNIOR_SOLO):
        raise TandemRequestError(f"extra_args sets both {EXTRA_SOLO!r} and {EXTRA_JUNIOR_SOLO!r}; a request has one author")
    if extra.get(EXTRA_SOLO):
        return 0, True
    if extra.get(EXTRA_JUNIOR_SOLO):
        return 0, False
    key = extra.get(EXTRA_KEY)
    if not isinstance(key, int) or isinstance(key, bool) or key < 0:
        raise TandemRequestError(
            f"tandem request without a valid extra_args[{EXTRA_KEY!r}] (got {key!r}); pass "
            f"tandem_extra_args(request_key(prompt_id, sample)) or {{{EXTRA_SOLO!r}: True}} for solo"
        )
    return key, False


def is_junior_solo(extra_args: dict | None) -> bool:
    """Whether the junior writes every token of the request (`EXTRA_JUNIOR_SOLO`)."""
    return bool((extra_args or {}).get(EXTRA_JUNIOR_SOLO))


def is_vllm_own_request(extra_args: dict | None) -> bool:
    """Whether a request that reached the model runner is vLLM's own: no tandem entry at all.

    vLLM's kernel warm-up, profiling and dummy sampling build such requests and skip
    `validate_params`, which refuses a user's key-less request at admission; the tandem
    processor treats them as solo and keeps no state for them.
    """
    extra = extra_args or {}
    return not {EXTRA_KEY, EXTRA_SOLO, EXTRA_JUNIOR_SOLO} & set(extra)


# Penalties that vLLM's V2 sampler applies before custom logits processors
# (vllm/v1/worker/gpu/sample/sampler.py, its list of processors), so to the senior's logits only.
PENALTIES = {"repetition_penalty": 1.0, "frequency_penalty": 0.0, "presence_penalty": 0.0}


def check_v2_penalties(params) -> None:
    """Refuse penalties on a tandem request for vLLM's V2 runner, which applies them before the junior's
    logits are put in: junior tokens would ignore them (V1 applies them after: accepted there)."""
    if parse_tandem_extra_args(params.extra_args)[1]:
        return  # solo: the senior writes every token, and the senior's logits are penalised
    used = [f"{name}={getattr(params, name)}" for name, neutral in PENALTIES.items()
            if getattr(params, name, neutral) != neutral]
    if used:
        raise TandemRequestError(
            f"{', '.join(used)}: vLLM's V2 model runner applies penalties before the tandem processor, so the "
            "junior's tokens would ignore them; drop them for tandem requests (solo requests may use them)")


def check_tandem_params(params) -> None:
    """What both runners' logits processors refuse in `validate_params` (`SamplingParams` in)."""
    parse_tandem_extra_args(params.extra_args)
    if params.n != 1:
        raise TandemRequestError("tandem requests must use n=1 (one request, one key, per sample)")
    if params.logit_bias:
        raise TandemRequestError("logit_bias is not supported by the tandem engine")
    if params.prompt_logprobs is not None:
        raise TandemRequestError("prompt_logprobs are not supported by the tandem engine")
