"""`TandemForCausalLM`: one vLLM model that holds the senior and the junior.

vLLM sees a single decoder whose attention layers are the senior's (`senior.*`) and the
junior's (`junior.*`). Both share the scheduler, the block tables and the prompt/output
tokens of every request, and each keeps its own paged KV cache (vLLM allocates one per
attention layer). Every step both run on all tokens, so both caches stay complete
whoever wrote a token; `compute_logits` returns the senior's logits and leaves the
junior's in `handoff.SLOT` for `TandemLogitsProcessor`, which picks each row's author.

Weights: the senior's checkpoint is the engine's `model`; the junior's is declared as a
`secondary_weights` source (prefix `junior.`), which vLLM's default loader streams after
the senior's. Weight syncs from a trainer (senior names only) update the senior alone;
the junior stays frozen. A junior with another vocabulary is refused.
"""

from __future__ import annotations

from vllm_source.runtime import require_vllm

require_vllm()

import contextlib  # noqa: E402
import itertools  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402
from vllm.config import VllmConfig  # noqa: E402
from vllm.model_executor.model_loader.default_loader import DefaultModelLoader  # noqa: E402
from vllm.model_executor.models.utils import init_vllm_registered_model  # noqa: E402

from tandem.errors import TandemError  # noqa: E402
from vllm_source.engine_config import tandem_config_from_hf  # noqa: E402
from vllm_source.handoff import ALL_SENIOR, SLOT  # noqa: E402
from vllm_source.pairing import check_pair  # noqa: E402
from vllm_source.junior_guard import JuniorGuard  # noqa: E402
from vllm_source.weights import JUNIOR_PREFIX, split_stream  # noqa: E402


def _causal_lm_architecture(hf_config, explicit: str | None) -> str:
    """The senior's own architecture (hf_overrides replaced `architectures` with ours)."""
    if explicit:
        return explicit
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    arch = MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(hf_config.model_type)
    if arch is None:
        raise TandemError(
            f"cannot tell the senior's architecture for model_type {hf_config.model_type!r}; "
            "pass tandem.senior_architecture (e.g. 'Qwen3ForCausalLM')"
        )
    return arch


def _junior_hf_config(model_config, junior_path: str):
    """The junior's HF config, loaded the way vLLM loads the senior's (self-paired: the same object)."""
    if junior_path == model_config.model:
        return model_config.hf_config
    from vllm.transformers_utils.config import get_config

    return get_config(junior_path, trust_remote_code=model_config.trust_remote_code)


def refuse_v2_model_runner(vllm_config) -> None:
    """vLLM's V2 model runner runs no custom logits processors: the junior would never write."""
    if getattr(vllm_config, "use_v2_model_runner", False):
        raise TandemError(
            "vLLM's V2 model runner is on (VLLM_USE_V2_MODEL_RUNNER=1 or a V2-only feature) and runs no custom "
            "logits processors, so the junior would never write a token; unset VLLM_USE_V2_MODEL_RUNNER"
        )


@contextlib.contextmanager
def junior_compile_tag():
    """The junior's trunk compiles under its own tag, so its compile artifacts never mix with the senior's."""
    try:
        from vllm.compilation.backends import set_model_tag
    except ImportError:  # a vLLM without the tag: nothing to separate
        yield
        return
    with set_model_tag(JUNIOR_COMPILE_TAG):
        yield


JUNIOR_COMPILE_TAG = "junior"


class TandemForCausalLM(nn.Module):
    """Senior + junior in one vLLM model; see the module docstring."""

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__()
        refuse_v2_model_runner(vllm_config)
        model_config = vllm_config.model_config
        hf_config = model_config.hf_config
        self.cfg = tandem_config_from_hf(hf_config)
        if vllm_config.parallel_config.pipeline_parallel_size != 1:
            raise TandemError("the tandem vLLM backend does not support pipeline parallelism")
        arch = _causal_lm_architecture(hf_config, self.cfg.senior_architecture)
        junior_path = self.cfg.junior_model or model_config.model
        junior_hf = _junior_hf_config(model_config, junior_path)
        check_pair(hf_config, junior_hf, junior_path)
        self._check_tokenizers(model_config, junior_path)

        self.senior = init_vllm_registered_model(
            vllm_config, prefix=_join(prefix, "senior"), hf_config=hf_config, architectures=[arch]
        )
        junior_arch = arch if junior_hf is hf_config else (junior_hf.architectures or [arch])[0]
        with junior_compile_tag():
            self.junior = init_vllm_registered_model(
                vllm_config, prefix=_join(prefix, "junior"), hf_config=junior_hf, architectures=[junior_arch]
            )
        self.junior.requires_grad_(False)
        self.senior_hidden, self.junior_hidden = hf_config.hidden_size, junior_hf.hidden_size
        # Skipping the junior's trunk on an all-solo step leaves its KV cache unwritten for
        # those tokens; with prefix caching a later tandem request could reuse those blocks.
        self._may_skip_junior_trunk = not vllm_config.cache_config.enable_prefix_caching
        # vLLM's default loader streams these after the senior's checkpoint (prefix `junior.`).
        self.secondary_weights = [
            DefaultModelLoader.Source(junior_path, revision=None, prefix=JUNIOR_PREFIX),
        ]
        self._junior_loaded = False
        # Under sleep mode a host copy of the junior restores it after a level-2 sleep.
        self.junior_guard = JuniorGuard(self._junior_params, bool(getattr(model_config, "enable_sleep_mode", False)))

    @staticmethod
    def _check_tokenizers(model_config, junior_path: str) -> None:
        from transformers import AutoTokenizer

        from tandem.models import check_same_vocab

        trc = model_config.trust_remote_code
        senior_tok = AutoTokenizer.from_pretrained(model_config.tokenizer, trust_remote_code=trc)
        check_same_vocab(senior_tok, AutoTokenizer.from_pretrained(junior_path, trust_remote_code=trc))

    def embed_input_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        raise TandemError("the tandem engine runs on token ids only (no prompt embeddings)")

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None, **kwargs):
        if inputs_embeds is not None or intermediate_tensors is not None:
            raise TandemError("the tandem engine runs on token ids only, without pipeline parallelism")
        senior = self.senior(input_ids, positions, None, None, **kwargs)
        if self._may_skip_junior_trunk and SLOT.all_solo():
            # Every row is solo (e.g. a validation batch): the junior's cache is never read for them.
            junior = senior.new_zeros(senior.shape[0], self.junior_hidden)
        else:
            junior = self.junior(input_ids, positions, None, None, **kwargs)
        # One tensor, so vLLM's row selection (logits_indices) applies to both halves.
        return torch.cat([senior, junior], dim=-1)

    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor | None:
        if not self._junior_loaded:
            raise TandemError("the junior's weights were never loaded (load_format='dummy'?); use 'auto'")
        self.junior_guard.on_step()
        senior_h = hidden_states[..., : self.senior_hidden]
        junior_h = hidden_states[..., self.senior_hidden :]
        senior = self.senior.compute_logits(senior_h)
        if senior is None:  # ranks that do not sample
            return senior
        if SLOT.all_solo():
            SLOT.put(ALL_SENIOR)
            return senior
        junior = self.junior.compute_logits(junior_h)  # also in dummy runs: memory profiling must see it
        if SLOT.live_rows() == 0:
            SLOT.clear()  # a dummy run (profiling, warm-up): no processor takes these; keep nothing
        else:
            SLOT.put(junior)
        return senior

    def load_weights(self, weights) -> set[str]:
        """Senior weights (initial load or trainer sync) and, on the initial load, the junior's."""
        senior_part, junior_part = split_stream(weights)
        loaded = {f"senior.{n}" for n in self.senior.load_weights(senior_part)}
        first = next(junior_part, None)
        if first is None:  # a weight sync (one call per bucket): senior names only
            self.junior_guard.on_sync()
            return loaded
        loaded |= {f"junior.{n}" for n in self.junior.load_weights(itertools.chain([first], junior_part))}
        self._junior_loaded = True
        self.junior_guard.loaded()
        return loaded

    def _junior_params(self) -> list[torch.Tensor]:
        return [p for _, p in self.junior.named_parameters()]


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name
