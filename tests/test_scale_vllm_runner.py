"""Both arms decode on one vLLM model runner, read back from the engine (vllm_source/model_runner.py).

A solo engine (the GRPO arm's shape: plain Qwen3 architecture) and the tandem engine are
built the way the eval backend and the trainer build them, and each reports the runner
class its workers actually hold. The report hook that verl's rollout servers use is run
in a fresh multi-process engine, where only the `vllm.general_plugins` entry point can
install it. A request for vLLM's V2 runner is refused before any weights load.
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed; the scale lane (bash scripts/test_scale.sh) runs this")
pytestmark = pytest.mark.vllm

from tandem.process.config import TandemConfig  # noqa: E402
from tandem.errors import TandemError  # noqa: E402
from test_scale_vllm_engine import LLM_KWARGS, in_process_engines  # noqa: E402,F401
from vllm_source.engine import VLLMEngine  # noqa: E402
from vllm_source.model_runner import REPORT_ENV, RUNNER_ENV, read_engine_report  # noqa: E402


def runner_of(senior, cfg):
    engine = VLLMEngine(str(senior), cfg, **LLM_KWARGS)
    try:
        return engine.model_runner()
    finally:
        del engine
        gc.collect()


def test_the_solo_and_the_tandem_engine_report_the_same_v1_runner(scale_senior, monkeypatch):
    import vllm

    monkeypatch.delenv(RUNNER_ENV, raising=False)
    solo, team = runner_of(scale_senior, None), runner_of(scale_senior, TandemConfig())
    assert solo == team
    assert solo["runner"] == "v1" and solo["vllm"] == vllm.__version__
    assert solo["model_runner"].startswith("vllm.v1.worker.") and "_model_runner." in solo["model_runner"]
    assert os.environ[RUNNER_ENV] == "0"  # pinned by the engine for every later engine of this process


def test_a_request_for_the_v2_runner_is_refused_before_any_weights_load(monkeypatch, tmp_path):
    monkeypatch.setenv(RUNNER_ENV, "1")
    with pytest.raises(TandemError, match="V2 model runner.*unset VLLM_USE_V2_MODEL_RUNNER"):
        VLLMEngine(str(tmp_path / "no-such-model"), None, **LLM_KWARGS)  # a load would fail on the path first


def test_each_worker_of_a_multi_process_engine_reports_its_runner_through_the_plugin(scale_senior, tmp_path):
    """vLLM's default engine: workers in other processes, the report hook installed by the entry point."""
    report = tmp_path / "engines.jsonl"
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(f"""
        from tandem.process.config import TandemConfig
        from vllm_source.engine import VLLMEngine
        if __name__ == "__main__":  # vLLM spawns its engine process from here
            engine = VLLMEngine({str(scale_senior)!r}, TandemConfig(), **{LLM_KWARGS!r})
            print("RESULT", engine.model_runner()["model_runner"])
    """))
    env = {k: v for k, v in os.environ.items() if k not in ("VLLM_ENABLE_V1_MULTIPROCESSING", RUNNER_ENV)}
    env[REPORT_ENV] = str(report)
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=420)
    assert proc.returncode == 0, proc.stderr[-3000:]
    from_rpc = [line.split()[1] for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    records = read_engine_report(report)
    assert len(records) == 1 and records[0]["pid"] != os.getpid()
    assert records[0]["runner"] == "v1" and [records[0]["model_runner"]] == from_rpc
    assert json.loads(report.read_text().splitlines()[0])["vllm"].startswith("0.28.")
