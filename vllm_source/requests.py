"""What a tandem request carries into vLLM, and the authorship mask of what came out.

A request names its replayable coin stream with a request key in
`SamplingParams.extra_args`; the engine's logits processor reads it there (it sees no
request id). Validation requests are marked *solo*: the senior writes every token, as in
the paper's evaluation of the senior. A request with neither is refused (fail closed).
The mask of a finished response is `tandem.process.response_authorship_mask`.
"""

from __future__ import annotations

from tandem.errors import TandemError

EXTRA_KEY = "tandem_request_key"  # int: keys the request's coins (tandem.coins.request_key)
EXTRA_SOLO = "tandem_solo"  # bool: the senior writes every token (validation)


class TandemRequestError(TandemError, ValueError):
    """A request the tandem engine cannot honour (vLLM expects ValueError from validate_params)."""


def tandem_extra_args(key: int | None, solo: bool = False) -> dict:
    """The `extra_args` entries of one tandem request (merge them into any others)."""
    if solo:
        return {EXTRA_SOLO: True}
    if not isinstance(key, int) or key < 0:
        raise TandemRequestError(f"a tandem request needs a non-negative integer key, got {key!r}")
    return {EXTRA_KEY: key}


def parse_tandem_extra_args(extra_args: dict | None) -> tuple[int, bool]:
    """(request key, solo) from a request's `extra_args`; raises when neither is given."""
    extra = extra_args or {}
    if extra.get(EXTRA_SOLO):
        return 0, True
    key = extra.get(EXTRA_KEY)
    if not isinstance(key, int) or isinstance(key, bool) or key < 0:
        raise TandemRequestError(
            f"tandem request without a valid extra_args[{EXTRA_KEY!r}] (got {key!r}); pass "
            f"tandem_extra_args(request_key(prompt_id, sample)) or {{{EXTRA_SOLO!r}: True}} for solo"
        )
    return key, False


def check_tandem_params(params) -> None:
    """What both runners' logits processors refuse in `validate_params` (`SamplingParams` in)."""
    parse_tandem_extra_args(params.extra_args)
    if params.n != 1:
        raise TandemRequestError("tandem requests must use n=1 (one request, one key, per sample)")
    if params.logit_bias:
        raise TandemRequestError("logit_bias is not supported by the tandem engine")
    if params.prompt_logprobs is not None:
        raise TandemRequestError("prompt_logprobs are not supported by the tandem engine")
