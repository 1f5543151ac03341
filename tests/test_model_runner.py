"""Both arms on vLLM's V1 model runner: the pin, and the runner read back from the workers.

The pin refuses a V2 request (`vllm_source/model_runner.py`). The smoke summary's runner fields
come from what the rollout workers wrote, and refuse a mix:
`scripts/scale/smoke_summary.py` reads `engines-1.jsonl` and `engines-2.jsonl` (one line per
vLLM worker, written by `vllm_source/model_runner.py`'s report hook); the lane runs it on real
launches, this checks its rules on hand-written records.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("smoke_summary", REPO / "scripts" / "scale" / "smoke_summary.py")
smoke_summary = importlib.util.module_from_spec(spec)
spec.loader.exec_module(smoke_summary)

V1 = {"vllm": "0.28.0", "runner": "v1", "model_runner": "vllm.v1.worker.gpu_model_runner.GPUModelRunner",
      "runner_env": "0"}


def write(run: Path, n: int, *records: dict) -> None:
    run.mkdir(exist_ok=True)
    (run / f"engines-{n}.jsonl").write_text("".join(json.dumps({**r, "pid": 1}) + "\n" for r in records))


def test_the_runner_the_workers_of_both_launches_agree_on_is_reported(tmp_path):
    write(tmp_path, 1, V1, V1)
    write(tmp_path, 2, V1, V1)
    assert smoke_summary.engines(tmp_path) == {"vllm_version": "0.28.0", "model_runner": "v1",
                                               "model_runner_class": V1["model_runner"], "engine_workers": 4,
                                               "runner_env": ["0"]}


def test_workers_on_two_runners_are_an_error(tmp_path):
    write(tmp_path, 1, V1)
    write(tmp_path, 2, {**V1, "runner": "v2", "model_runner": "vllm.v1.worker.gpu.model_runner.GPUModelRunner"})
    with pytest.raises(SystemExit, match="2 vLLM model runners"):
        smoke_summary.engines(tmp_path)


def test_a_launch_whose_workers_wrote_nothing_is_an_error(tmp_path):
    write(tmp_path, 1, V1)
    with pytest.raises(SystemExit, match="engines-2.jsonl is missing"):
        smoke_summary.engines(tmp_path)


def test_the_runner_generation_is_read_from_the_class_module():
    from vllm_source.compat import runner_generation

    def cls(module):
        return type("Runner", (), {"__module__": module})

    assert runner_generation(cls("vllm.v1.worker.gpu_model_runner")) == "v1"
    assert runner_generation(cls("vllm.v1.worker.cpu_model_runner")) == "v1"
    assert runner_generation(cls("vllm.v1.worker.gpu.model_runner")) == "v2"
    assert runner_generation(cls("vllm.v1.worker.cpu.model_runner")) == "v2"


@pytest.mark.parametrize("value", ["1", "true", "True"])
def test_a_v2_request_is_refused_in_one_line(value):
    from tandem.errors import TandemError
    from vllm_source.model_runner import pin_v1_runner

    with pytest.raises(TandemError) as e:
        pin_v1_runner({"VLLM_USE_V2_MODEL_RUNNER": value})
    assert "\n" not in str(e.value) and "unset VLLM_USE_V2_MODEL_RUNNER" in str(e.value)


@pytest.mark.parametrize("env", [{}, {"VLLM_USE_V2_MODEL_RUNNER": "0"}, {"VLLM_USE_V2_MODEL_RUNNER": "false"}])
def test_the_pin_sets_v1_for_every_engine_started_later(env):
    from vllm_source.model_runner import pin_v1_runner

    pin_v1_runner(env)
    assert env == {"VLLM_USE_V2_MODEL_RUNNER": "0"}
