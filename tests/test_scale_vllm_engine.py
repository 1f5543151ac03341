"""The vLLM tandem backend, run for real, against the reference engine (`tandem.reference.engine`).

Runs in the scale lane (`bash scripts/test_scale.sh`: vLLM's CPU build, or vLLM on a GPU)
and skips where vLLM is not installed. Under greedy decoding in float32 the vLLM tandem
engine must emit the reference engine's tokens and authorship masks exactly, for every
selection strategy, with a junior of other weights, several samples per prompt and
prompts of different lengths: that checks the dual decoder (both KV caches complete),
the per-row author choice, the request keys and the coin replay in one go.

The models are SFT'd tiny bases (`tandem_app.train.tiny_base`), so responses contain word,
sentence and step boundaries. Most engines run in-process
(VLLM_ENABLE_V1_MULTIPROCESSING=0, cheap to start); one test runs vLLM's default
multi-process engine in a fresh interpreter, where only the `vllm.general_plugins`
entry point can register the tandem model.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed; the scale lane (bash scripts/test_scale.sh) runs this")
pytestmark = pytest.mark.vllm

from tandem.process.config import TandemConfig  # noqa: E402
from tandem.reference.engine import TandemEngine  # noqa: E402
from tandem.errors import TandemError  # noqa: E402
from tandem.models.loading import load_model, load_tokenizer  # noqa: E402
from tandem.process.coins import request_key  # noqa: E402
from tandem.rollout.sampling import SamplingConfig  # noqa: E402
from tandem_app.task import generate_problems  # noqa: E402
from tandem_app.train.data import prompt_ids_batch  # noqa: E402
from tandem_app.train.tiny_base import SMOKE_TASK  # noqa: E402
from tandem.process.strategies import REGISTRY  # noqa: E402
from vllm_source.compat import validation_error_type  # noqa: E402
from vllm_source.engine import VLLMEngine, sampling_params  # noqa: E402
from vllm_source.requests import tandem_extra_args  # noqa: E402
from vllm_source.runtime import vllm_platform  # noqa: E402

MAX_NEW = 40
SAMPLES = 2  # responses per prompt, each with its own request key
PROMPT_IDS = ["p0", "p1", "p2"]
STRATEGIES = {  # this file's settings of each registered strategy (tandem/process/strategies.py)
    "word": dict(prob_senior=0.5, max_gap_tokens=4),
    "bernoulli": dict(prob_senior=0.5),
    "sentence": dict(first_author="senior"),
    "step": dict(first_author="senior"),
    "alternating": dict(first_author="junior"),
    "chunk": dict(chunk_size=3),
}
if vllm_platform() == "unspecified":
    pytest.skip("this vLLM found no device (a CUDA build without a GPU)", allow_module_level=True)
DEVICE = "cpu" if vllm_platform() == "cpu" else "cuda"
LLM_KWARGS = dict(dtype="float32", max_model_len=512, seed=0)
if DEVICE == "cuda":
    LLM_KWARGS["gpu_memory_utilization"] = 0.3


@pytest.fixture(scope="module", autouse=True)
def in_process_engines():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        mp.setenv("VLLM_CPU_KVCACHE_SPACE", os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"))
        yield


@pytest.fixture(scope="module")
def tokenizer(scale_senior):
    return load_tokenizer(scale_senior)


@pytest.fixture(scope="module")
def prompts(tokenizer) -> list[list[int]]:
    """Three chat prompts of different lengths (one problem has a longer wording)."""
    problems = generate_problems("test", 24, 0, SMOKE_TASK)
    picked = sorted(problems, key=lambda p: len(p.prompt))
    ids = prompt_ids_batch(tokenizer, [picked[0], picked[len(picked) // 2], picked[-1]])
    assert len({len(p) for p in ids}) == 3
    return ids


GREEDY = SamplingConfig(temperature=0.0, max_new_tokens=MAX_NEW)
KEYS = [request_key(pid, s) for pid in PROMPT_IDS for s in range(SAMPLES)]  # each sample its own key


def rows(prompts) -> list[list[int]]:
    return [p for p in prompts for _ in range(SAMPLES)]


def reference(senior_dir, junior_dir, cfg, tokenizer, prompts, solo=False):
    """The reference engine's rollouts of every sample."""
    senior = load_model(senior_dir, "float32", DEVICE)
    junior = None if solo else load_model(junior_dir, "float32", DEVICE)
    return TandemEngine(senior, junior, tokenizer, cfg).generate(rows(prompts), GREEDY, KEYS, solo=solo)


def vllm_rows(cfg, senior_dir, prompts, solo=False):
    engine = VLLMEngine(str(senior_dir), cfg, **LLM_KWARGS)
    try:
        return engine.generate(rows(prompts), GREEDY, KEYS, solo=solo)
    finally:
        del engine
        gc.collect()


@pytest.mark.parametrize("strategy", sorted(REGISTRY))
def test_vllm_greedy_tokens_and_masks_equal_the_reference_engine(
    strategy, scale_senior, scale_junior, tokenizer, prompts
):
    cfg = TandemConfig(selection_strategy=strategy, junior_model=str(scale_junior), **STRATEGIES.get(strategy, {}))
    want = reference(scale_senior, scale_junior, cfg, tokenizer, prompts)
    got = vllm_rows(cfg, scale_senior, prompts)
    assert [g.token_ids for g in got] == [w.token_ids for w in want]
    assert [g.authorship_mask for g in got] == [w.authorship_mask for w in want]
    masks = [m for g in got for m in g.authorship_mask]
    assert 0 < sum(masks) < len(masks), "both authors must write for the comparison to mean anything"


def test_vllm_samples_of_one_prompt_get_their_own_keys_and_coins(scale_senior, scale_junior, prompts):
    cfg = TandemConfig(selection_strategy="bernoulli", prob_senior=0.5, junior_model=str(scale_junior))
    got = vllm_rows(cfg, scale_senior, prompts)
    for i in range(0, len(got), SAMPLES):
        first, second = got[i], got[i + 1]
        assert first.prompt_ids == second.prompt_ids and first.request_key != second.request_key
        assert first.authorship_mask != second.authorship_mask


def test_vllm_solo_and_junior_solo_requests_equal_each_model_alone(scale_senior, scale_junior, tokenizer, prompts):
    """Solo (validation): the senior writes every token; junior solo (the transfer reward's receiver): the junior
    does; both ignore the coins (all the junior's here), alone and mixed in one batch."""
    cfg = TandemConfig(prob_senior=0.0, junior_model=str(scale_junior))
    senior = reference(scale_senior, None, cfg, tokenizer, prompts, solo=True)
    junior = reference(scale_junior, None, cfg, tokenizer, prompts, solo=True)
    engine = VLLMEngine(str(scale_senior), cfg, **LLM_KWARGS)
    try:
        solo = engine.generate(rows(prompts), GREEDY, KEYS, solo=True)
        receiver = engine.generate(rows(prompts), GREEDY, KEYS, junior_solo=True)
        mixed = [sampling_params(engine.vllm, GREEDY, key, tandem_extra_args(key, solo=i % 2 == 1,
                                                                             junior_solo=i % 2 == 0))
                 for i, key in enumerate(KEYS)]
        outs = engine.llm.generate([{"prompt_token_ids": list(p)} for p in rows(prompts)], mixed, use_tqdm=False)
    finally:
        del engine
        gc.collect()
    assert [g.token_ids for g in solo] == [w.token_ids for w in senior]
    assert all(set(g.authorship_mask) == {1} for g in solo)
    assert [g.token_ids for g in receiver] == [w.token_ids for w in junior]
    assert all(set(g.authorship_mask) == {0} for g in receiver)
    assert [w.token_ids for w in junior] != [w.token_ids for w in senior], "the models must differ to tell them apart"
    assert [list(o.outputs[0].token_ids) for o in outs] == [(junior if i % 2 == 0 else senior)[i].token_ids
                                                          for i in range(len(KEYS))]


@pytest.fixture(scope="module")
def word_engine(scale_senior, scale_junior):
    """An engine whose linear layers compute from their live weights on CPU, as verl's rollout servers do
    (`vllm_source/cpu_weights.py`: the packed kernels would ignore a junior updated in place)."""
    from vllm.model_executor.layers import utils

    from vllm_source import cpu_weights

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(utils, "dispatch_cpu_unquantized_gemm", utils.dispatch_cpu_unquantized_gemm)  # undone after
        cpu_weights.apply()
        engine = VLLMEngine(str(scale_senior), TandemConfig(junior_model=str(scale_junior)), **LLM_KWARGS)
        yield engine
        del engine
        gc.collect()


@pytest.fixture(scope="module")
def word_llm(word_engine):
    return word_engine.llm


def follower(model, rule: str):
    """A `JuniorUpdater` over the engine's own senior and junior (same shapes: `scale_junior` is the senior's
    shape with other weights), as a verl rollout worker builds it for a self-paired junior."""
    from tandem.process.junior_update import parse_junior_update
    from vllm_source.engine_junior import JuniorUpdater

    return JuniorUpdater(parse_junior_update(rule), model.junior, model.senior, model.junior_guard, self_paired=True)


def test_the_junior_follows_the_senior_in_vllms_layout_and_comes_back_from_its_saved_state(
    word_engine, scale_senior, scale_junior, tokenizer, prompts
):
    """sync:1 copies the senior into the junior inside the running engine (vLLM's fused, loaded parameters):
    greedy team rollouts then equal the senior's solo ones; ema:0.5 halves the distance; restoring the saved
    state brings back the reference engine's team rollouts exactly."""
    llm = word_engine.llm
    saved, synced = llm.apply_model(lambda m: (follower(m, "sync:1").state(), follower(m, "sync:1").update(1)))[0]
    assert synced["max_abs_diff_before"] > 0.01 and synced["max_abs_diff_after"] == 0.0 and synced["changed"] == 1
    team = word_engine.generate(rows(prompts), GREEDY, KEYS)
    solo = word_engine.generate(rows(prompts), GREEDY, KEYS, solo=True)
    assert [t.token_ids for t in team] == [s.token_ids for s in solo]
    assert any(0 in t.authorship_mask for t in team)  # the junior wrote, with the senior's weights

    restored = llm.apply_model(lambda m: follower(m, "sync:1").restore(saved))[0]
    assert restored["through"] == 0
    half = llm.apply_model(lambda m: follower(m, "ema:0.5").update(1))[0]
    assert half["max_abs_diff_after"] == pytest.approx(0.5 * half["max_abs_diff_before"], rel=1e-6)
    llm.apply_model(lambda m: follower(m, "sync:1").restore(saved))
    want = reference(scale_senior, scale_junior, TandemConfig(junior_model=str(scale_junior)), tokenizer, prompts)
    got = word_engine.generate(rows(prompts), GREEDY, KEYS)
    assert [g.token_ids for g in got] == [w.token_ids for w in want]
    assert [g.authorship_mask for g in got] == [w.authorship_mask for w in want]


def test_a_frozen_engines_junior_refuses_to_follow(word_llm):
    with pytest.raises(Exception, match="junior is frozen .* set tandem.junior_update to sync:K or ema:BETA"):
        word_llm.apply_model(lambda m: m.junior_updater.update(1))


def test_vllm_refuses_a_request_without_a_key(word_llm):
    import vllm

    with pytest.raises(validation_error_type(), match="tandem_request_key") as err:
        word_llm.generate([{"prompt_token_ids": [1, 2, 3]}], vllm.SamplingParams(max_tokens=4), use_tqdm=False)
    assert isinstance(err.value, TandemError)


def test_vllm_refuses_n_greater_than_one(word_llm):
    import vllm

    params = vllm.SamplingParams(max_tokens=4, n=2, extra_args={"tandem_request_key": 7})
    with pytest.raises(validation_error_type(), match="n=1"):
        word_llm.generate([{"prompt_token_ids": [1, 2, 3]}], params, use_tqdm=False)


def test_vllm_refuses_a_junior_with_another_vocabulary(scale_senior, tmp_path):
    from tandem_app.zoo import TinyModelConfig, build_tiny

    other = build_tiny(tmp_path / "other-vocab", seed=2, cfg=TinyModelConfig(vocab_size=384))
    cfg = TandemConfig(junior_model=str(other))
    with pytest.raises(TandemError, match="vocab"):
        VLLMEngine(str(scale_senior), cfg, **LLM_KWARGS)


MULTIPROCESS_SCRIPT = """
import json, sys
from tandem.process.config import TandemConfig
from tandem.rollout.sampling import SamplingConfig
from vllm_source.engine import VLLMEngine

if __name__ == "__main__":
    senior, junior, prompts, keys = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
    cfg = TandemConfig(prob_senior=0.5, max_gap_tokens=4, junior_model=junior)
    engine = VLLMEngine(senior, cfg, dtype="float32", max_model_len=512, seed=0)
    out = engine.generate(prompts, SamplingConfig(temperature=0.0, max_new_tokens={max_new}), keys)
    print("RESULT " + json.dumps([[r.token_ids, r.authorship_mask] for r in out]))
"""


def test_vllm_multiprocess_engine_registers_the_model_through_the_plugin_entry_point(
    scale_senior, scale_junior, tokenizer, prompts, tmp_path
):
    script = tmp_path / "mp.py"
    script.write_text(MULTIPROCESS_SCRIPT.format(max_new=MAX_NEW))
    env = {k: v for k, v in os.environ.items() if k != "VLLM_ENABLE_V1_MULTIPROCESSING"}
    argv = [sys.executable, str(script), str(scale_senior), str(scale_junior), json.dumps(rows(prompts)),
            json.dumps(KEYS)]
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=420)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stderr[-3000:]
    got = json.loads(lines[-1][len("RESULT "):])
    cfg = TandemConfig(prob_senior=0.5, max_gap_tokens=4, junior_model=str(scale_junior))
    want = reference(scale_senior, scale_junior, cfg, tokenizer, prompts)
    assert got == [[w.token_ids, w.authorship_mask] for w in want]


def test_a_senior_only_engine_is_a_rollout_backend_that_generates_solo_only(scale_senior, tokenizer, prompts):
    from tandem.rollout.contract import Rollout, RolloutBackend

    engine = VLLMEngine(str(scale_senior), None, **LLM_KWARGS)
    try:
        assert isinstance(engine, RolloutBackend)
        out = engine.generate(prompts, GREEDY, KEYS[: len(prompts)], solo=True)
        assert all(isinstance(r, Rollout) and r.authorship_mask == [1] * len(r.token_ids) for r in out)
        assert [r.text for r in out] == [tokenizer.decode(r.token_ids, skip_special_tokens=True) for r in out]
        with pytest.raises(TandemError, match="senior only"):
            engine.generate(prompts, GREEDY, KEYS[: len(prompts)])
    finally:
        del engine
        gc.collect()


def test_cli_rollout_on_vllm_writes_what_the_reference_engine_writes(scale_senior, scale_junior, tmp_path):
    from tandem_app.commands.cli import main

    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"id": "a", "prompt": "Ava has 5 pens. She sells 2 pens. How many pens does Ava have now?"}\n'
                       '{"id": "b", "prompt": "Leo has 3 coins."}\n')
    out = {}
    for backend in ("engine", "vllm"):
        out[backend] = tmp_path / f"{backend}.jsonl"
        assert main(["rollout", "--backend", backend, "--senior", str(scale_senior), "--junior", str(scale_junior),
                     "--prompts", str(prompts), "--n", "2", "--temperature", "0", "--max-new-tokens", "24",
                     "--max-gap-tokens", "4", "--out", str(out[backend])]) == 0
    rows = {b: [json.loads(line) for line in p.read_text().splitlines()] for b, p in out.items()}
    fields = ("prompt_id", "sample", "token_ids", "authorship_mask", "text", "finish_reason")
    assert [{f: r[f] for f in fields} for r in rows["vllm"]] == [{f: r[f] for f in fields} for r in rows["engine"]]
