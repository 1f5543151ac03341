"""What the two placements' models share: the pair read from the engine's config, each model built.

`TandemPair` is the base of `TandemForCausalLM` (`model.py`: both models on every rank)
and `TandemSplitForCausalLM` (`split.py`: the senior on rank 0, the junior on rank 1).
It reads the tandem config the engine carries, checks the pair (architecture, vocabulary,
tokenizers) before any weight loads, and builds the senior and the junior under their
prefixes, the junior frozen, under its own compile tag and compile-cache key (`ROLE_KEY`),
with its checkpoint declared as vLLM's `secondary_weights`. The placements differ only in where each model lives, how
the two logits meet, and which weights a rank loads.
"""

from __future__ import annotations

from vllm_source.runtime import require_vllm

require_vllm()

import copy  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402
from vllm.config import VllmConfig  # noqa: E402
from vllm.model_executor.model_loader.default_loader import DefaultModelLoader  # noqa: E402
from vllm.model_executor.models.utils import init_vllm_registered_model  # noqa: E402

from tandem.errors import TandemError  # noqa: E402
from vllm_source.compat import compile_tag, config_runner, tandem_runner  # noqa: E402
from vllm_source.engine_config import tandem_config_from_hf  # noqa: E402
from vllm_source.pairing import check_context, check_pair  # noqa: E402
from vllm_source.weights import JUNIOR_PREFIX  # noqa: E402

JUNIOR_COMPILE_TAG = "junior"
# Set on each trunk's copy of its HF config: "senior" or "junior". vLLM keys its ahead-of-time compile
# cache (VLLM_USE_AOT_COMPILE, on by default with torch >= 2.10) by the trunk's config hash and its
# forward's code, not by the compile tag (0.28/0.33 `compilation/decorators.py`, `aot_compile_hash_factors`
# + `_model_hash_key`): a self-paired junior's trunk hashed as the senior's and loaded the artifact the
# senior had just saved. The config hash includes the HF config's JSON, so the role keeps them apart.
ROLE_KEY = "tandem_role"


def with_role(hf_config, role: str):
    """A copy of `hf_config` naming the model's role (`ROLE_KEY`); the model code never reads it."""
    tagged = copy.deepcopy(hf_config)
    setattr(tagged, ROLE_KEY, role)
    return tagged


def causal_lm_architecture(hf_config, explicit: str | None) -> str:
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


def junior_hf_config(model_config, junior_path: str):
    """The junior's HF config, loaded the way vLLM loads the senior's (self-paired: the same object)."""
    if junior_path == model_config.model:
        return model_config.hf_config
    from vllm.transformers_utils.config import get_config

    return get_config(junior_path, trust_remote_code=model_config.trust_remote_code)


def check_tokenizers(model_config, junior_path: str) -> None:
    """The junior reads the senior's token ids: both tokenizers must agree."""
    from transformers import AutoTokenizer

    from tandem.models.loading import check_same_vocab

    trc = model_config.trust_remote_code
    senior_tok = AutoTokenizer.from_pretrained(model_config.tokenizer, trust_remote_code=trc)
    check_same_vocab(senior_tok, AutoTokenizer.from_pretrained(junior_path, trust_remote_code=trc))


def check_model_runner(vllm_config, vllm_version: str | None = None, runner: str | None = None) -> None:
    """The engine must decode on the runner the tandem processor runs on with this vLLM (`compat.tandem_runner`).

    On the other runner the junior would never write (no custom logits processors), or the
    engine would run a runner that is deprecated and untested here.
    """
    if vllm_version is None:
        import vllm

        vllm_version = vllm.__version__
    got = config_runner(vllm_config)
    if got == (runner or tandem_runner()):
        return
    if got == "v2":
        raise TandemError(
            f"vLLM {vllm_version}'s V2 model runner is on (VLLM_USE_V2_MODEL_RUNNER=1 or a V2-only feature) and runs "
            "no custom logits processors, so the junior would never write a token; unset VLLM_USE_V2_MODEL_RUNNER"
        )
    raise TandemError(
        f"vLLM {vllm_version}'s V1 model runner is on (VLLM_USE_V2_MODEL_RUNNER=0 or a feature V2 lacks); the tandem "
        "engine runs on its V2 runner there: unset VLLM_USE_V2_MODEL_RUNNER"
    )


def junior_compile_tag():
    """The junior's trunk compiles under its own tag, so its compile artifacts never mix with the senior's."""
    return compile_tag(JUNIOR_COMPILE_TAG)


def join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


class TandemPair(nn.Module):
    """The senior/junior pair of one engine; the placements subclass it (see the module docstring)."""

    def __init__(self, vllm_config: VllmConfig) -> None:
        super().__init__()
        check_model_runner(vllm_config)
        model_config = vllm_config.model_config
        self._hf_config = model_config.hf_config
        self.cfg = tandem_config_from_hf(self._hf_config)
        self._arch = causal_lm_architecture(self._hf_config, self.cfg.senior_architecture)
        self._junior_path = self.cfg.junior_model or model_config.model
        self._junior_hf = junior_hf_config(model_config, self._junior_path)
        check_pair(self._hf_config, self._junior_hf, self._junior_path, self.cfg.placement)
        check_context(model_config.max_model_len, self._junior_hf, self._junior_path)
        check_tokenizers(model_config, self._junior_path)
        # Under sleep mode a host copy of the junior restores it after a level-2 sleep.
        self._keep_junior_host_copy = bool(getattr(model_config, "enable_sleep_mode", False))
        self._junior_loaded = False

    def build_senior(self, vllm_config: VllmConfig, prefix: str) -> nn.Module:
        return init_vllm_registered_model(
            vllm_config, prefix=join(prefix, "senior"), hf_config=with_role(self._hf_config, "senior"),
            architectures=[self._arch],
        )

    def build_junior(self, vllm_config: VllmConfig, prefix: str) -> nn.Module:
        """The frozen junior; vLLM's default loader streams its checkpoint after the senior's (prefix `junior.`)."""
        arch = self._arch if self._junior_hf is self._hf_config else (self._junior_hf.architectures or [self._arch])[0]
        with junior_compile_tag():  # its own compile tag and (ROLE_KEY) its own AOT compile cache key
            junior = init_vllm_registered_model(
                vllm_config, prefix=join(prefix, "junior"), hf_config=with_role(self._junior_hf, "junior"),
                architectures=[arch],
            )
        junior.requires_grad_(False)
        self.secondary_weights = [DefaultModelLoader.Source(self._junior_path, revision=None, prefix=JUNIOR_PREFIX)]
        return junior

    def embed_input_ids(self, input_ids: torch.Tensor) -> torch.Tensor:
        raise TandemError("the tandem engine runs on token ids only (no prompt embeddings)")

    @staticmethod
    def check_token_ids_only(intermediate_tensors, inputs_embeds) -> None:
        if inputs_embeds is not None or intermediate_tensors is not None:
            raise TandemError("the tandem engine runs on token ids only, without pipeline parallelism")

    def check_junior_loaded(self) -> None:
        if not self._junior_loaded:
            raise TandemError("the junior's weights were never loaded (load_format='dummy'?); use 'auto'")

    def _junior_params(self) -> list[torch.Tensor]:
        return [p for _, p in self.junior.named_parameters()]
