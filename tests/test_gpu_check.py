"""scripts/gpu_check.sh's CPU-side logic: arguments, no-GPU exit, skip reasons, the report.

No GPU exists here, so nothing below claims a GPU result: the GPU is a fake `nvidia-smi`
and the checks' commands go to a fake runner that writes their logs and exit codes. What
is tested is what gpu_check.py decides from those: statuses, reasons, versions, the
summary line and the exit code.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("gpu_check", REPO / "scripts" / "gpu_check.py")
gpu_check = importlib.util.module_from_spec(spec)
sys.modules["gpu_check"] = gpu_check  # dataclasses look their module up there
spec.loader.exec_module(gpu_check)

FACTS = {"python": "3.12.3", "torch": "2.11.0+cu130", "torch_cuda": "13.0", "cuda_available": True,
         "device_count": 1, "vllm": "0.24.0", "verl": "0.9.1", "transformers": "5.9.0", "flashinfer": "0.6.12",
         "flash_attn": "2.8.3.post2"}


def fake_smi(tmp_path: Path, gpus: int) -> Path:
    """An nvidia-smi that lists `gpus` H100s (0: exits 9 like nvidia-smi without devices)."""
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir(parents=True, exist_ok=True)
    rows = "\\n".join(["NVIDIA H100 80GB HBM3, 81559, 580.95.05"] * gpus)
    smi.write_text("#!/usr/bin/env bash\n"
                   + ('echo "No devices were found"; exit 9\n' if gpus == 0 else
                      f'case "$1" in --query-gpu*) printf "{rows}\\n" ;; '
                      '*) echo "| NVIDIA-SMI 580.95.05  Driver Version: 580.95.05  CUDA Version: 13.0 |" ;; esac\n'))
    smi.chmod(0o755)
    return smi


class FakeRunner(gpu_check.Runner):
    """Exit codes by check (the log file name); probes print their JSON as the real ones do."""

    def __init__(self, rcs: dict | None = None, facts: dict | None = FACTS, async_on: bool = True):
        self.rcs, self.facts, self.async_on, self.calls = rcs or {}, facts, async_on, []

    def run(self, cmd, env, log, timeout):
        self.calls.append((log.name, cmd, env))
        log.parent.mkdir(parents=True, exist_ok=True)
        name = log.name.removesuffix(".log")
        text = ""
        if name == "stack" and self.facts is not None:
            text = "GPU_CHECK_PROBE " + json.dumps(self.facts)
        elif name == "async_scheduling":
            text = "GPU_CHECK_PROBE " + json.dumps({"async_scheduling": self.async_on, "enforce_eager": True})
        elif name.startswith("vllm_"):
            text = "3 passed in 9.1s"
        log.write_text(text + "\n")
        if name == "launch-2" and self.rcs.get("launches", 0) == 0:
            write_launch_files(log.parent, tandem=log.parent.name.startswith("tandem"))
        return self.rcs.get(name, 0 if (name != "stack" or self.facts) else 1)


def write_launch_files(run_dir: Path, tandem: bool) -> None:
    """What a finished launcher pair leaves: verl's metrics, the trace, checkpoints (as on CPU)."""
    def metrics(steps):
        return "".join(json.dumps({"step": s, "data": {"timing_s/step": 3.0, "critic/score/mean": 0.4,
                                                        "actor/grad_norm": 0.5,
                                                        **({"actor/tandem/senior_token_fraction": 0.5,
                                                            "actor/tandem/senior_rollout_probs_diff_max": 2e-3}
                                                           if tandem else {})}}) + "\n" for s in steps)
    (run_dir / "metrics-1.jsonl").write_text(metrics([1, 2]))
    (run_dir / "metrics-2.jsonl").write_text(metrics([3]))
    placement = {"tandem": "shared", "tandem_split": "split"}.get(run_dir.name)
    tp = 2 if placement == "split" else 1
    hydra = run_dir / "hydra-1" / ".hydra"
    hydra.mkdir(parents=True, exist_ok=True)
    (hydra / "config.yaml").write_text(json.dumps({  # JSON is YAML
        "tandem": {"enable": tandem, "placement": placement},
        "actor_rollout_ref": {"rollout": {"tensor_model_parallel_size": tp}}}))
    for s in (2, 3):
        (run_dir / "ckpt" / run_dir.name / f"global_step_{s}").mkdir(parents=True, exist_ok=True)


def run_main(tmp_path, argv, runner=None, gpus=1, monkeypatch=None):
    monkeypatch.setenv("GPU_CHECK_NVIDIA_SMI", str(fake_smi(tmp_path, gpus)))
    monkeypatch.setenv("GPU_CHECK_PYTHON", sys.executable)
    rc = gpu_check.main(["--out", str(tmp_path / "out"), "--no-install", *argv], runner=runner or FakeRunner())
    report = tmp_path / "out" / "gpu_check.json"
    data = json.loads(report.read_text()) if report.exists() else None
    return rc, data, {c["name"]: c for c in data["checks"]} if data else None


def shell(args, tmp_path, **env):
    full = {**os.environ, **env}
    return subprocess.run(["bash", str(REPO / "scripts" / "gpu_check.sh"), *args], env=full, capture_output=True,
                          text=True, timeout=60)


def test_without_a_gpu_it_says_so_in_one_line_exits_2_and_writes_nothing(tmp_path):
    res = shell(["--out", str(tmp_path / "out")], tmp_path, GPU_CHECK_NVIDIA_SMI=str(tmp_path / "no-such-smi"))
    assert res.returncode == 2 and res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1 and "no NVIDIA GPU" in res.stderr
    assert not (tmp_path / "out" / "gpu_check.json").exists()


def test_an_nvidia_smi_that_finds_no_device_counts_as_no_gpu(tmp_path):
    res = shell(["--out", str(tmp_path / "out")], tmp_path, GPU_CHECK_NVIDIA_SMI=str(fake_smi(tmp_path, 0)))
    assert res.returncode == 2 and "no NVIDIA GPU" in res.stderr


@pytest.mark.parametrize("args, words", [([], "--out"), (["--out", "x", "--only", "vllm_tp3"], "vllm_tp3"),
                                         (["--out", "x", "--bogus"], "--bogus")])
def test_bad_arguments_fail_in_one_line_before_looking_for_a_gpu(tmp_path, args, words):
    res = shell(args, tmp_path, GPU_CHECK_NVIDIA_SMI=str(fake_smi(tmp_path, 1)))
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1 and words in res.stderr


def test_help_lists_every_check():
    res = subprocess.run(["bash", str(REPO / "scripts" / "gpu_check.sh"), "--help"], capture_output=True, text=True)
    assert res.returncode == 0 and all(name in res.stdout for name in gpu_check.CHECKS)


def test_detect_gpus_reads_name_driver_and_the_drivers_cuda(tmp_path):
    gpus = gpu_check.detect_gpus(str(fake_smi(tmp_path, 2)))
    assert len(gpus) == 2 and gpus[0] == {"name": "NVIDIA H100 80GB HBM3", "memory_mib": "81559",
                                          "driver": "580.95.05", "driver_cuda": "13.0"}


def test_all_green_on_one_gpu_with_tp2_skipped_for_want_of_a_second(tmp_path, monkeypatch, capsys):
    rc, data, checks = run_main(tmp_path, [], monkeypatch=monkeypatch)
    assert rc == 0 and [c["name"] for c in data["checks"]] == list(gpu_check.CHECKS)
    for two_gpu_check in ("vllm_tp2", "launch_tandem_split"):
        assert checks[two_gpu_check]["status"] == "skipped"
        assert "needs 2 GPUs; this machine has 1" in checks[two_gpu_check]["reason"]
    assert all(c["status"] == "passed" for n, c in checks.items() if n not in ("vllm_tp2", "launch_tandem_split"))
    assert data["versions"] == {"driver": "580.95.05", "driver_cuda": "13.0", "cuda": "13.0", "torch": "2.11.0+cu130",
                                "vllm": "0.24.0", "verl": "0.9.1", "transformers": "5.9.0", "flashinfer": "0.6.12",
                                "flash_attn": "2.8.3.post2", "python": "3.12.3"}
    line = capsys.readouterr().out.strip()
    assert line == data["summary"] and line.startswith("gpu check: 8 passed, 0 failed, 2 skipped | 1x NVIDIA H100")
    assert checks["launch_tandem"]["details"]["resumed_step"] == 3
    assert checks["launch_tandem"]["details"]["placement"] == "shared"
    assert "senior-token rollout/trainer gap per step 2.0e-03, 2.0e-03, 2.0e-03" in checks["launch_tandem"]["reason"]


def test_two_gpus_run_the_tp2_selection_and_the_launchers_on_both(tmp_path, monkeypatch):
    runner = FakeRunner()
    rc, _, checks = run_main(tmp_path, [], runner=runner, gpus=2, monkeypatch=monkeypatch)
    assert rc == 0 and checks["vllm_tp2"]["status"] == "passed"
    assert checks["launch_tandem_split"]["status"] == "passed"
    assert checks["launch_tandem_split"]["details"]["placement"] == "split"
    tp2 = next(cmd for name, cmd, _ in runner.calls if name == "vllm_tp2.log")
    assert tp2[tp2.index("-k") + 1] == "tensor_parallel or tp2 or split"
    launch_env = next(env for name, _, env in runner.calls if name == "launch-1.log")
    assert launch_env["SMOKE_DEVICE"] == "gpu" and launch_env["SMOKE_N_GPUS"] == "2"


def test_checks_run_on_cuda_not_on_the_cpu_lane_switches(tmp_path, monkeypatch):
    monkeypatch.setenv("VLLM_TARGET_DEVICE", "cpu")
    monkeypatch.setenv("VERL_PLATFORM", "cpu")
    monkeypatch.setenv("VERL_USE_EXTERNAL_MODULES", "tandem.integrations.verl_cpu")  # verl/cpu_overrides.sh
    runner = FakeRunner()
    run_main(tmp_path, [], runner=runner, monkeypatch=monkeypatch)
    for _, _, env in runner.calls:
        assert "VLLM_TARGET_DEVICE" not in env and "VERL_PLATFORM" not in env
        assert "VERL_USE_EXTERNAL_MODULES" not in env
        assert env["PYTHONPATH"].split(os.pathsep)[0] == str(REPO) and env["TANDEM_REQUIRE_SCALE"] == "1"


def test_a_failed_check_fails_the_run_and_is_named_in_the_summary(tmp_path, monkeypatch, capsys):
    rc, data, checks = run_main(tmp_path, [], runner=FakeRunner({"vllm_engine": 1}), monkeypatch=monkeypatch)
    assert rc == 1 and checks["vllm_engine"]["status"] == "failed"
    assert "(failed: vllm_engine)" in capsys.readouterr().out


def test_a_selection_that_matches_no_test_is_skipped_with_the_reason_not_passed(tmp_path, monkeypatch):
    rc, _, checks = run_main(tmp_path, [], runner=FakeRunner({"vllm_compiled": 5}), monkeypatch=monkeypatch)
    assert rc == 0 and checks["vllm_compiled"]["status"] == "skipped"
    assert "no scale-lane test matches -k 'compiled'" in checks["vllm_compiled"]["reason"]


def test_async_scheduling_turned_off_is_a_failure(tmp_path, monkeypatch):
    rc, _, checks = run_main(tmp_path, [], runner=FakeRunner(async_on=False), monkeypatch=monkeypatch)
    assert rc == 1 and checks["async_scheduling"]["status"] == "failed"


def test_an_unusable_stack_fails_and_skips_everything_else_with_the_reason(tmp_path, monkeypatch):
    cpu_only = {**FACTS, "cuda_available": False, "device_count": 0}
    rc, data, checks = run_main(tmp_path, [], runner=FakeRunner(facts=cpu_only), monkeypatch=monkeypatch)
    assert rc == 1 and checks["stack"]["status"] == "failed" and "torch must see CUDA" in checks["stack"]["reason"]
    assert all(c["status"] == "skipped" and "stack is not usable" in c["reason"]
               for n, c in checks.items() if n != "stack")
    assert data["versions"]["torch"] is None  # nothing claimed about a stack that did not pass


def test_a_launch_that_fails_stops_that_launcher_and_names_the_launch(tmp_path, monkeypatch):
    rc, _, checks = run_main(tmp_path, [], runner=FakeRunner({"launch-2": 1, "launches": 1}), monkeypatch=monkeypatch)
    assert rc == 1 and checks["launch_tandem"]["status"] == "failed"
    assert "launch 2 (3 steps) exited 1" in checks["launch_tandem"]["reason"]


def test_a_resume_that_did_not_happen_fails_the_launcher_check(tmp_path, monkeypatch):
    class NoResume(FakeRunner):
        def run(self, cmd, env, log, timeout):
            rc = super().run(cmd, env, log, timeout)
            if log.name == "launch-2.log":  # the relaunch started over at step 1
                (log.parent / "metrics-2.jsonl").write_text(json.dumps(
                    {"step": 1, "data": {"timing_s/step": 3.0, "actor/tandem/senior_token_fraction": 0.5}}) + "\n")
            return rc
    rc, _, checks = run_main(tmp_path, [], runner=NoResume(), monkeypatch=monkeypatch)
    assert rc == 1 and checks["launch_vanilla"]["status"] == "failed" and "step 1 resumed" in checks["launch_vanilla"]["reason"]


def test_only_and_skip_select_checks_and_say_why_the_rest_did_not_run(tmp_path, monkeypatch):
    runner = FakeRunner()
    rc, _, checks = run_main(tmp_path, ["--only", "vllm_engine", "bench_vllm", "--skip", "bench_vllm"], runner=runner,
                             monkeypatch=monkeypatch)
    assert rc == 0 and checks["vllm_engine"]["status"] == "passed" and checks["stack"]["status"] == "passed"
    assert checks["bench_vllm"]["reason"] == "not selected (--only/--skip)"
    assert {name for name, _, _ in runner.calls} == {"stack.log", "vllm_engine.log"}


def test_launchers_without_their_data_are_skipped(tmp_path, monkeypatch):
    rc, _, checks = run_main(tmp_path, ["--skip", "launchers_data"], monkeypatch=monkeypatch)
    assert checks["launch_tandem"]["status"] == "skipped" and "no training data" in checks["launch_tandem"]["reason"]
