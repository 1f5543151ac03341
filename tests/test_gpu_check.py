"""scripts/gpu_check.sh's CPU-side logic: arguments, no-GPU exit, skip reasons, the report.

No GPU exists here, so nothing below claims a GPU result: the GPU is a fake `nvidia-smi`
and the checks' commands go to a fake runner that writes their logs and exit codes. What
is tested is what scripts/gpu_checks/ decides from those: statuses, reasons, versions, the
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
sys.modules["gpu_check"] = gpu_check
spec.loader.exec_module(gpu_check)

from _tandem_gpu_check.checkout import STACK, WHEELHOUSE  # noqa: E402  (importable once the entry has loaded the package)
from _tandem_gpu_check.checks import CHECKS  # noqa: E402
from _tandem_gpu_check.machine import detect_gpus  # noqa: E402
from _tandem_gpu_check.command_runner import Runner  # noqa: E402

TESTED = STACK.TESTED
# What the stack probe prints for the tested stack (sdpa only: no flash-attn)
FACTS = {"python": "3.12.3", "torch": f"{TESTED.torch}+{TESTED.torch_cuda}", "torch_cuda": "13.0",
         "cuda_available": True, "device_count": 1, "vllm": TESTED.vllm, "verl": STACK.VERL,
         "transformers": STACK.TRANSFORMERS_RESOLVED, "flashinfer": TESTED.flashinfer, "flash_attn": None}


# What the V2 engine probe prints on a good V2 stack (scripts/gpu_checks/engine_checks.py V2_PROBE)
V2_PROBE_OUT = {"vllm": "0.32.0", "runner": "v2", "model_runner": "vllm.v1.worker.gpu.model_runner.GPUModelRunner",
                "async_scheduling": True, "cudagraph_mode": "CUDAGraphMode.FULL_AND_PIECEWISE",
                "equal_to_reference": True}


def fake_smi(tmp_path: Path, gpus: int, driver: str = "580.95.05", cuda: str = "13.0") -> Path:
    """An nvidia-smi that lists `gpus` H100s on `driver` (0: exits 9 like nvidia-smi without devices)."""
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir(parents=True, exist_ok=True)
    rows = "\\n".join([f"NVIDIA H100 80GB HBM3, 81559, {driver}"] * gpus)
    smi.write_text("#!/usr/bin/env bash\n"
                   + ('echo "No devices were found"; exit 9\n' if gpus == 0 else
                      f'case "$1" in --query-gpu*) printf "{rows}\\n" ;; '
                      f'*) echo "| NVIDIA-SMI {driver}  Driver Version: {driver}  CUDA Version: {cuda} |" ;; esac\n'))
    smi.chmod(0o755)
    return smi


class FakeRunner(Runner):
    """Exit codes by check (the log file name); probes print their JSON as the real ones do."""

    def __init__(self, rcs: dict | None = None, facts: dict | None = FACTS, async_on: bool = True,
                 v2: dict | None = None):
        self.rcs, self.facts, self.async_on, self.calls = rcs or {}, facts, async_on, []
        self.v2 = v2 or V2_PROBE_OUT

    def run(self, cmd, env, log, timeout):
        self.calls.append((log.name, cmd, env))
        log.parent.mkdir(parents=True, exist_ok=True)
        name = log.name.removesuffix(".log")
        text = ""
        if name == "stack" and self.facts is not None:
            text = "GPU_CHECK_PROBE " + json.dumps(self.facts)
        elif name == "async_scheduling":
            text = "GPU_CHECK_PROBE " + json.dumps({"async_scheduling": self.async_on, "enforce_eager": True})
        elif name == "vllm_v2":
            text = "GPU_CHECK_PROBE " + json.dumps(self.v2)
        elif name.startswith("vllm_"):
            text = "3 passed in 9.1s"
        log.write_text(text + "\n")
        if name == "launch-2" and self.rcs.get("launches", 0) == 0:
            folder = log.parent.parent.name  # launchers, or launchers-<variant> (scripts/gpu_checks/launchers.py VARIANTS)
            write_launch_files(log.parent, tandem=log.parent.name.startswith("tandem"),
                               variant=folder.removeprefix("launchers-") if folder != "launchers" else None)
        return self.rcs.get(name, 0 if (name != "stack" or self.facts) else 1)


def write_launch_files(run_dir: Path, tandem: bool, runner: str = "v1", variant: str | None = None) -> None:
    """What a finished launcher pair leaves: verl's metrics, the trace, checkpoints (as on CPU)."""
    def extra(s):
        if variant == "moving":  # tandem_verl.junior_driver; the resumed launch rebuilt step 2's junior
            return {"junior/updated": 1.0, "junior/checksum": 10.0 + s,
                    "junior/senior_max_abs_diff": 0.0,
                    **({"junior/resumed_checksum": 12.0} if s == 3 else {})}
        if variant == "transfer":  # tandem_verl.transfer_reward: 0.4 = verifier 0.2 + 0.5 x R_transfer 0.4
            return {"transfer/reward_mean": 0.4, "transfer/continuations": 12.0, "transfer/receiver_acc": 0.5,
                    "critic/verifier_score/mean": 0.2, "perf/total_num_tokens": 640.0, "prompt_length/mean": 10.0,
                    "response_length/mean": 10.0}
        return {"partner_score": -3.5, "timing_s/partner_score": 0.5} if variant == "score" else {}

    def metrics(steps):
        return "".join(json.dumps({"step": s, "data": {"timing_s/step": 3.0, "critic/score/mean": 0.4,
                                                        "actor/grad_norm": 0.5, **extra(s),
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
        "tandem": {"enable": tandem, "placement": placement,
                   "junior_update": "sync:1" if variant == "moving" else "frozen"},
        "actor_rollout_ref": {"rollout": {"tensor_model_parallel_size": tp}}}))
    for s in (2, 3):
        (run_dir / "ckpt" / run_dir.name / f"global_step_{s}").mkdir(parents=True, exist_ok=True)
    for n in (1, 2):  # each rollout worker's engine report (vllm_source/model_runner.py, read by smoke_summary)
        module = "gpu.model_runner" if runner == "v2" else "gpu_model_runner"
        (run_dir / f"engines-{n}.jsonl").write_text(json.dumps(
            {"vllm": TESTED.vllm, "runner": runner, "model_runner": f"vllm.v1.worker.{module}.GPUModelRunner"})
            + "\n")


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
    assert res.returncode == 0 and all(name in res.stdout for name in CHECKS)


def test_detect_gpus_reads_name_driver_and_the_drivers_cuda(tmp_path):
    gpus = detect_gpus(str(fake_smi(tmp_path, 2)))
    assert len(gpus) == 2 and gpus[0] == {"name": "NVIDIA H100 80GB HBM3", "memory_mib": "81559",
                                          "driver": "580.95.05", "driver_cuda": "13.0"}


def test_all_green_on_one_gpu_with_tp2_skipped_for_want_of_a_second(tmp_path, monkeypatch, capsys):
    rc, data, checks = run_main(tmp_path, [], monkeypatch=monkeypatch)
    assert rc == 0 and [c["name"] for c in data["checks"]] == list(CHECKS)
    for two_gpu_check in ("vllm_tp2", "launch_tandem_split"):
        assert checks[two_gpu_check]["status"] == "skipped"
        assert "needs 2 GPUs; this machine has 1" in checks[two_gpu_check]["reason"]
    assert checks["vllm_v2"]["status"] == "skipped" and "--v2-python" in checks["vllm_v2"]["reason"]
    assert all(c["status"] == "passed" for n, c in checks.items()
               if n not in ("vllm_tp2", "launch_tandem_split", "vllm_v2"))
    assert data["versions"] == {"driver": "580.95.05", "driver_cuda": "13.0", "cuda": "13.0",
                                "torch": f"{TESTED.torch}+cu130", "vllm": TESTED.vllm, "verl": STACK.VERL,
                                "transformers": STACK.TRANSFORMERS_RESOLVED, "flashinfer": TESTED.flashinfer,
                                "flash_attn": None, "python": "3.12.3"}
    assert data["expected_stack"] == {"vllm": TESTED.vllm, "status": "tested", "torch": TESTED.torch,
                                      "torch_cuda": TESTED.torch_cuda, "flashinfer": TESTED.flashinfer,
                                      "flashinfer_cubin": TESTED.flashinfer_cubin, "verl": STACK.VERL,
                                      "transformers": STACK.TRANSFORMERS_RESOLVED}
    assert data["wheelhouse"] is None
    line = capsys.readouterr().out.strip()
    assert line == data["summary"] and line.startswith("gpu check: 11 passed, 0 failed, 3 skipped | 1x NVIDIA H100")
    assert checks["launch_tandem"]["details"]["resumed_step"] == 3
    assert checks["launch_tandem"]["details"]["placement"] == "shared"
    assert "senior-token rollout/trainer gap per step 2.0e-03, 2.0e-03, 2.0e-03" in checks["launch_tandem"]["reason"]


def test_the_moving_junior_and_the_partner_score_each_launch_the_tandem_run_with_their_setting(tmp_path, monkeypatch):
    """launch_tandem_moving passes only if the junior moved every step and the resume rebuilt step 2's;
    launch_tandem_score only if every step logged a finite partner score."""
    runner = FakeRunner()
    rc, _, checks = run_main(tmp_path, [], runner=runner, monkeypatch=monkeypatch)
    assert rc == 0
    assert "junior checksum per step [11.0, 12.0, 13.0], rebuilt at resume: 12.0" in checks["launch_tandem_moving"]["reason"]
    assert "partner score per step [-3.5, -3.5, -3.5]" in checks["launch_tandem_score"]["reason"]
    assert ("junior-solo continuations per step [12.0, 12.0, 12.0], receiver accuracy [0.5, 0.5, 0.5], "
            "reward = verifier + 0.5 R_transfer each step: True") in checks["launch_tandem_transfer"]["reason"]
    launches = [cmd for name, cmd, _ in runner.calls if name == "launch-1.log"]
    assert any("tandem.junior_update=sync:1" in cmd for cmd in launches)
    assert any("partner_reward.weight=0.1" in cmd for cmd in launches)
    assert any("partner_reward.kind=transfer" in cmd for cmd in launches)
    assert (tmp_path / "out" / "launchers-moving" / "data").resolve() == tmp_path / "out" / "launchers" / "data"


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
    monkeypatch.setenv("VERL_USE_EXTERNAL_MODULES", "tandem_verl.cpu_platform")  # verl/cpu_overrides.sh
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


def v2_lane_files() -> list[str]:
    return sorted(str(p.relative_to(REPO)) for p in REPO.glob("tests/test_scale_vllm_v2_*.py"))


def test_the_v2_check_runs_the_v2_engine_probe_then_each_v2_lane_file_in_its_own_process(tmp_path, monkeypatch):
    runner = FakeRunner()
    rc, _, checks = run_main(tmp_path, ["--v2-python", "/v2/bin/python"], runner=runner, monkeypatch=monkeypatch)
    assert rc == 0 and checks["vllm_v2"]["status"] == "passed"
    assert "V2 runner" in checks["vllm_v2"]["reason"] and "async scheduling on" in checks["vllm_v2"]["reason"]
    calls = [(name, cmd) for name, cmd, _ in runner.calls if name.startswith("vllm_v2-")]
    files = v2_lane_files()
    assert len(files) >= 4 and [cmd[7] for _, cmd in calls] == files  # one pytest process per file
    assert all(cmd[:7] == ["/v2/bin/python", "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider"] for _, cmd in calls)
    assert [name for name, _ in calls] == [f"vllm_v2-{Path(f).stem}.log" for f in files]


@pytest.mark.parametrize("gpus, deselect", [(1, ["-k", "not split"]), (2, [])])
def test_the_v2_lanes_split_tests_are_deselected_below_two_gpus(gpus, deselect, tmp_path, monkeypatch):
    runner = FakeRunner()
    rc, _, checks = run_main(tmp_path, ["--v2-python", "/v2/bin/python"], runner=runner, gpus=gpus,
                             monkeypatch=monkeypatch)
    assert rc == 0 and checks["vllm_v2"]["status"] == "passed"
    assert all(cmd[8:] == deselect for name, cmd, _ in runner.calls if name.startswith("vllm_v2-"))
    assert ("split tests deselected" in checks["vllm_v2"]["reason"]) == (gpus == 1)


@pytest.mark.parametrize("user_setting", [None, "tf32"])
def test_every_check_compares_fp32_with_full_precision_triton_dots(user_setting, tmp_path, monkeypatch):
    """TF32 in Triton's tl.dot (TRITON_ATTN at float32 on an H100) would make greedy equality marginal:
    every check runs with TRITON_F32_DEFAULT=ieee, the V1 engine checks and launchers as the V2 ones (issue 61)."""
    if user_setting is None:
        monkeypatch.delenv("TRITON_F32_DEFAULT", raising=False)
    else:
        monkeypatch.setenv("TRITON_F32_DEFAULT", user_setting)
    runner = FakeRunner()
    run_main(tmp_path, ["--v2-python", "/v2/bin/python"], runner=runner, gpus=2, monkeypatch=monkeypatch)
    names = {name.removesuffix(".log") for name, _, _ in runner.calls}
    assert {"stack", "async_scheduling", "vllm_engine", "vllm_compiled", "vllm_tp2", "vllm_v2", "bench_vllm",
            "launch-1", "launch-2"} <= names
    assert len([n for n in names if n.startswith("vllm_v2")]) == 1 + len(v2_lane_files())
    assert all(env["TRITON_F32_DEFAULT"] == "ieee" for _, _, env in runner.calls)


def test_the_v2_probe_fails_on_any_host_sync_in_vllms_step(tmp_path, monkeypatch):
    """VLLM_GPU_SYNC_CHECK=error: vLLM raises on a GPU<->CPU sync in its step after warm-up (the probe only;
    the lane's tests drive vLLM's own warm-up passes, which sync, after the check is on)."""
    monkeypatch.delenv("VLLM_GPU_SYNC_CHECK", raising=False)
    runner = FakeRunner()
    _, _, checks = run_main(tmp_path, ["--v2-python", "/v2/bin/python"], runner=runner, monkeypatch=monkeypatch)
    envs = {name: env.get("VLLM_GPU_SYNC_CHECK") for name, _, env in runner.calls if name.startswith("vllm_v2")}
    assert envs.pop("vllm_v2.log") == "error" and set(envs.values()) == {None}
    assert "no host sync in a step" in checks["vllm_v2"]["reason"]


def test_a_failing_v2_lane_file_fails_the_check_and_is_named(tmp_path, monkeypatch):
    runner = FakeRunner({"vllm_v2-test_scale_vllm_v2_warmup": 1})
    rc, data, checks = run_main(tmp_path, ["--v2-python", "/v2/bin/python"], runner=runner, monkeypatch=monkeypatch)
    assert rc == 1 and checks["vllm_v2"]["status"] == "failed"
    assert checks["vllm_v2"]["reason"].endswith("failed: test_scale_vllm_v2_warmup")
    assert checks["vllm_v2"]["details"]["failed_files"] == ["test_scale_vllm_v2_warmup"]


@pytest.mark.parametrize("probe, words", [({"runner": "v1"}, "runner v1"), ({"async_scheduling": False}, "async"),
                                          ({"cudagraph_mode": "CUDAGraphMode.NONE"}, "CUDA graphs off"),
                                          ({"equal_to_reference": False}, "tokens differ")])
def test_a_v2_engine_off_its_runner_graphs_async_or_tokens_fails_and_says_which(probe, words, tmp_path, monkeypatch):
    runner = FakeRunner(v2={**V2_PROBE_OUT, **probe})
    rc, _, checks = run_main(tmp_path, ["--v2-python", "/v2/bin/python"], runner=runner, monkeypatch=monkeypatch)
    assert rc == 1 and checks["vllm_v2"]["status"] == "failed" and words in checks["vllm_v2"]["reason"]
    assert checks["vllm_v2"]["details"]["probe_passed"] is False
    ran = [name for name, _, _ in runner.calls if name.startswith("vllm_v2-")]  # the lane files still ran
    assert ran == [f"vllm_v2-{Path(f).stem}.log" for f in v2_lane_files()]
    assert checks["vllm_v2"]["reason"].endswith("V2 lane tests (split tests deselected: one GPU) passed")


def test_a_v2_engine_that_does_not_start_still_runs_the_lane_files_and_names_both(tmp_path, monkeypatch):
    """A failing probe never stops the other checks (issue 61): the lane files say what the probe could not."""
    runner = FakeRunner({"vllm_v2": 1, "vllm_v2-test_scale_vllm_v2_eval": 1})
    rc, _, checks = run_main(tmp_path, ["--v2-python", "/v2/bin/python"], runner=runner, monkeypatch=monkeypatch)
    v2 = checks["vllm_v2"]
    assert rc == 1 and v2["status"] == "failed" and v2["details"]["failed_files"] == ["test_scale_vllm_v2_eval"]
    assert v2["reason"].startswith("the tandem engine did not start on the V2 stack; V2 lane tests")
    assert v2["reason"].endswith("failed: test_scale_vllm_v2_eval")
    assert len([n for n, _, _ in runner.calls if n.startswith("vllm_v2-")]) == len(v2_lane_files())


def test_async_scheduling_turned_off_is_a_failure(tmp_path, monkeypatch):
    rc, _, checks = run_main(tmp_path, [], runner=FakeRunner(async_on=False), monkeypatch=monkeypatch)
    assert rc == 1 and checks["async_scheduling"]["status"] == "failed"


def test_an_unusable_stack_fails_and_skips_everything_else_with_the_reason(tmp_path, monkeypatch):
    cpu_only = {**FACTS, "cuda_available": False, "device_count": 0}
    rc, data, checks = run_main(tmp_path, [], runner=FakeRunner(facts=cpu_only), monkeypatch=monkeypatch)
    assert rc == 1 and checks["stack"]["status"] == "failed" and "torch must see CUDA" in checks["stack"]["reason"]
    assert all(c["status"] == "skipped" and "stack is not usable" in c["reason"]
               for n, c in checks.items() if n not in ("stack", "vllm_v2"))
    assert checks["vllm_v2"]["status"] == "skipped" and "--v2-python" in checks["vllm_v2"]["reason"]
    assert data["versions"]["torch"] is None  # nothing claimed about a stack that did not pass


def test_the_v2_check_runs_in_its_own_interpreter_when_the_v1_stack_is_unusable(tmp_path, monkeypatch):
    cpu_only = {**FACTS, "cuda_available": False, "device_count": 0}
    rc, data, checks = run_main(tmp_path, ["--v2-python", "/v2/bin/python"], runner=FakeRunner(facts=cpu_only),
                                monkeypatch=monkeypatch)
    assert checks["vllm_v2"]["status"] == "passed" and checks["stack"]["status"] == "failed" and rc == 1


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


# ------------------------------------------------------------------ installing the stack

class InstallRunner(FakeRunner):
    """No usable stack until the install's last step has run; records the install commands."""

    def __init__(self, steps: int = 3):
        super().__init__(facts=None)
        self.steps, self.installed = steps, False

    def run(self, cmd, env, log, timeout):
        if log.name == f"install-{self.steps - 1}.log":
            self.installed = True
        self.facts = FACTS if self.installed else None
        return super().run(cmd, env, log, timeout)

    def commands(self) -> list[list[str]]:
        return [cmd for name, cmd, _ in self.calls if name.startswith("install-")]


def stack_pins(release=TESTED) -> list[str]:
    pins = [f"torch=={release.torch}", f"vllm=={release.vllm}", f"flashinfer-python=={release.flashinfer}",
            f"verl=={STACK.VERL}", f"transformers=={STACK.TRANSFORMERS_RESOLVED}"]
    return pins + ([f"flashinfer-cubin=={release.flashinfer_cubin}"] if release.flashinfer_cubin else [])


def install_main(tmp_path, monkeypatch, argv, runner):
    monkeypatch.setenv("GPU_CHECK_NVIDIA_SMI", str(fake_smi(tmp_path, 1)))
    monkeypatch.delenv("GPU_CHECK_PYTHON", raising=False)
    rc = gpu_check.main(["--out", str(tmp_path / "out"), "--venv", str(tmp_path / "venv"), "--only", "stack", *argv],
                        runner=runner)
    return rc, json.loads((tmp_path / "out" / "gpu_check.json").read_text())


def test_with_no_stack_it_installs_the_tested_stack_of_stack_py_without_verls_vllm_extra(tmp_path, monkeypatch):
    runner = InstallRunner()
    rc, data = install_main(tmp_path, monkeypatch, [], runner)
    assert rc == 0 and data["checks"][0]["status"] == "passed" and "from the index" in data["checks"][0]["reason"]
    venv, install = runner.commands()[0], runner.commands()[-1]
    assert venv == [sys.executable, "-m", "venv", str(tmp_path / "venv")]
    assert sorted(install[install.index("install") + 1:install.index("-e")]) == sorted(stack_pins())
    assert install[-1] == f"{REPO}[dev,eval,wandb]" and not any("[vllm]" in a for a in install)
    assert data["expected_stack"]["vllm"] == TESTED.vllm and data["wheelhouse"] is None


class StandInPip:
    """The resolver's answer for a wheelhouse: each pinned requirement, with a small stand-in file."""

    def content(self, file: str) -> bytes:
        return (file.encode() * 40)[:1000]

    def resolve(self, python, requirements, constraints):
        pins = [r.split("==") for r in requirements if "==" in r]
        return [self.dist(name, version) for name, version in pins]

    def dist(self, name, version):
        file = f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
        import hashlib
        return WHEELHOUSE.Dist(name, version, file, f"https://files.example/{file}",
                                         hashlib.sha256(self.content(file)).hexdigest())

    def download(self, python, dists, dest):
        for d in dists:
            (dest / d.file).write_bytes(self.content(d.file))


def make_wheelhouse(tmp_path: Path, present: str | None = None, part_bytes: int | None = 400) -> tuple[Path, dict]:
    """A wheelhouse for this interpreter built by scripts/gpu_wheelhouse.py, every file cut into parts."""
    wh = WHEELHOUSE
    freeze = None
    if present is not None:
        freeze = tmp_path / "freeze.txt"
        freeze.write_text(present)
    target = wh.plan_target(f"{sys.version_info.major}.{sys.version_info.minor}", freeze)
    out = tmp_path / "wheelhouse"
    return out, wh.build(out, target, StandInPip(), part_bytes=part_bytes)


def test_a_wheelhouse_is_joined_then_installed_with_no_index(tmp_path, monkeypatch):
    folder, manifest = make_wheelhouse(tmp_path)
    assert list(folder.glob("*.part000"))
    runner = InstallRunner()
    rc, data = install_main(tmp_path, monkeypatch, ["--wheelhouse", str(folder)], runner)
    assert rc == 0 and "from the wheelhouse" in data["checks"][0]["reason"]
    assert [name for name, _, _ in runner.calls][0] == "install-0.log"  # no other interpreter is tried first
    assert not list(folder.glob("*.part*")) and all((folder / e["file"]).is_file() for e in manifest["files"])
    venv, tools, install = runner.commands()
    assert venv == [sys.executable, "-m", "venv", str(tmp_path / "venv")]
    local = ["--no-index", "--find-links", str(folder.resolve())]
    assert tools[3:] == ["install", *local, "--upgrade", *manifest["build_requires"]]
    assert install[3:] == ["install", *local, "--no-build-isolation", *manifest["stack"], "-e", f"{REPO}[dev,eval,wandb]"]
    assert data["wheelhouse"] == {"dir": str(folder.resolve()), "vllm": TESTED.vllm, "release_status": "tested",
                                  "torch_source": "wheelhouse", "python": manifest["python"],
                                  "file_count": manifest["file_count"], "total_bytes": manifest["total_bytes"]}


def test_a_wheelhouse_for_a_machine_with_torch_211_installs_vllm_024_next_to_it(tmp_path, monkeypatch):
    folder, manifest = make_wheelhouse(tmp_path, present="torch==2.11.0+cu130\n")
    accepted = STACK.release_for_torch("2.11.0")
    runner = InstallRunner()
    rc, data = install_main(tmp_path, monkeypatch, ["--wheelhouse", str(folder)], runner)
    venv, _, install = runner.commands()
    assert rc == 0 and "--system-site-packages" in venv  # the image's torch stays visible
    assert sorted(install[install.index("--no-build-isolation") + 1:install.index("-e")]) == sorted(stack_pins(accepted))
    assert data["expected_stack"]["vllm"] == accepted.vllm and data["expected_stack"]["status"] == "accepted"
    assert data["wheelhouse"]["torch_source"] == "present"


def wheelhouse_shell(tmp_path, *args):
    return shell(["--out", str(tmp_path / "out"), *args], tmp_path, GPU_CHECK_NVIDIA_SMI=str(fake_smi(tmp_path, 1)),
                 GPU_CHECK_LAUNCHER_PYTHON=sys.executable)


def assert_one_line_exit_2(res, tmp_path, *words):
    assert res.returncode == 2 and res.stdout.count("\n") <= 1, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu_check: "), res.stderr
    assert all(w in lines[0] for w in words), (words, lines[0])
    assert not (tmp_path / "out" / "gpu_check.json").exists()


def test_a_missing_wheelhouse_or_one_without_a_manifest_fails_in_one_line(tmp_path):
    assert_one_line_exit_2(wheelhouse_shell(tmp_path, "--wheelhouse", str(tmp_path / "nowhere")), tmp_path,
                           "no wheelhouse at", "gpu_wheelhouse.sh --out")
    (tmp_path / "empty").mkdir()
    assert_one_line_exit_2(wheelhouse_shell(tmp_path, "--wheelhouse", str(tmp_path / "empty")), tmp_path,
                           "has no manifest.json")


def edit_manifest(folder: Path, **changes) -> None:
    path = folder / "manifest.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


@pytest.mark.parametrize("breakage, words", [
    ("missing part", ["part000 is missing", "copy it again"]),
    ("bad json", ["is not a wheelhouse manifest", "rebuild it"]),
    ("unknown vllm", ["holds vLLM 0.25.0", "does not list", "rebuild it"]),
    ("old pins", ["was built for", "now pins", "rebuild it"]),
    ("other python", ["is for Python 3.99", "GPU_CHECK_LAUNCHER_PYTHON=python3.99"]),
    ("engine only", ["holds vLLM 0.33.0, an engine-only release", "no verl", "--v2-python", "-e .[eval] pytest"]),
])
def test_a_wheelhouse_that_cannot_serve_fails_in_one_line_before_any_work(tmp_path, breakage, words):
    folder, manifest = make_wheelhouse(tmp_path)
    if breakage == "missing part":
        next(folder.glob("*.part000")).unlink()
    elif breakage == "bad json":
        (folder / "manifest.json").write_text("{")
    elif breakage == "unknown vllm":
        edit_manifest(folder, vllm="0.25.0")
    elif breakage == "engine only":  # scripts/gpu_wheelhouse.sh --vllm 0.33.0: the V2 engine's own venv
        edit_manifest(folder, vllm="0.33.0", extras=["eval"])
    elif breakage == "old pins":
        edit_manifest(folder, stack=[p.replace(TESTED.vllm, "0.28.9") for p in manifest["stack"]])
    else:
        edit_manifest(folder, python="3.99")
    assert_one_line_exit_2(wheelhouse_shell(tmp_path, "--wheelhouse", str(folder)), tmp_path, *words)
    assert list(folder.glob("*.part*"))  # nothing joined


def test_a_wheelhouse_part_whose_sha256_differs_fails_in_one_line(tmp_path):
    folder, _ = make_wheelhouse(tmp_path)
    part = sorted(folder.glob("*.part001"))[0]
    part.write_bytes(bytes(b ^ 1 for b in part.read_bytes()))
    assert_one_line_exit_2(wheelhouse_shell(tmp_path, "--wheelhouse", str(folder)), tmp_path, part.name,
                           "differs from the manifest's sha256")


def test_wheelhouse_with_no_install_or_python_is_refused(tmp_path):
    folder, _ = make_wheelhouse(tmp_path)
    for extra in (["--no-install"], ["--python", sys.executable]):
        assert_one_line_exit_2(wheelhouse_shell(tmp_path, "--wheelhouse", str(folder), *extra), tmp_path,
                               "drop --no-install and --python")


def test_help_explains_the_wheelhouse_and_names_the_stacks_releases():
    res = subprocess.run(["bash", str(REPO / "scripts" / "gpu_check.sh"), "--help"], capture_output=True, text=True)
    assert res.returncode == 0 and "--wheelhouse DIR" in res.stdout and "no index" in res.stdout
    assert STACK.describe() in res.stdout


def test_a_launch_whose_rollout_workers_decoded_on_v2_fails_and_names_the_runner(tmp_path, monkeypatch):
    class OnV2(FakeRunner):
        def run(self, cmd, env, log, timeout):
            rc = super().run(cmd, env, log, timeout)
            if log.name == "launch-2.log" and log.parent.name == "vanilla":
                write_launch_files(log.parent, tandem=False, runner="v2")
            return rc
    rc, _, checks = run_main(tmp_path, [], runner=OnV2(), monkeypatch=monkeypatch)
    assert rc == 1 and checks["launch_vanilla"]["status"] == "failed"
    assert "v2 model runner (vllm.v1.worker.gpu.model_runner.GPUModelRunner)" in checks["launch_vanilla"]["reason"]
    assert checks["launch_tandem"]["status"] == "passed" and "v1 model runner" in checks["launch_tandem"]["reason"]
    assert checks["launch_tandem"]["details"]["vllm_version"] == TESTED.vllm


# ------------------------------------------------------------------ the driver, checked first (issue 61)

from _tandem_gpu_check import proofs  # noqa: E402
from _tandem_gpu_check.engine_checks import v2_venv_command  # noqa: E402
from _tandem_gpu_check.machine import driver_problem, forward_compat_driver, parse_gpus  # noqa: E402

# What `nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader,nounits` and plain
# `nvidia-smi` print on an H100 with each driver branch (the banner's second line, as the driver writes it)
SMI_SAMPLES = {
    "R535": ("NVIDIA H100 80GB HBM3, 81559, 535.183.01\n",
             "+---------------------------------------------------------------------------------------+\n"
             "| NVIDIA-SMI 535.183.01             Driver Version: 535.183.01   CUDA Version: 12.2     |\n"
             "|-----------------------------------------+----------------------+----------------------+\n"),
    "R570": ("NVIDIA H100 80GB HBM3, 81559, 570.133.20\nNVIDIA H100 80GB HBM3, 81559, 570.133.20\n",
             "+-----------------------------------------------------------------------------------------+\n"
             "| NVIDIA-SMI 570.133.20             Driver Version: 570.133.20     CUDA Version: 12.8     |\n"
             "|-----------------------------------------+------------------------+----------------------+\n"),
    "R580": ("NVIDIA H100 80GB HBM3, 81559, 580.159.04\n",
             "+-----------------------------------------------------------------------------------------+\n"
             "| NVIDIA-SMI 580.159.04             Driver Version: 580.159.04     CUDA Version: 13.0     |\n"
             "+-----------------------------------------+------------------------+----------------------+\n"),
}


@pytest.mark.parametrize("branch, driver, cuda, gpus, ok", [("R535", "535.183.01", "12.2", 1, False),
                                                           ("R570", "570.133.20", "12.8", 2, False),
                                                           ("R580", "580.159.04", "13.0", 1, True)])
def test_the_driver_is_read_from_nvidia_smi_and_judged_against_the_stacks_cuda(branch, driver, cuda, gpus, ok):
    found = parse_gpus(*SMI_SAMPLES[branch])
    assert found == [{"name": "NVIDIA H100 80GB HBM3", "memory_mib": "81559", "driver": driver,
                      "driver_cuda": cuda}] * gpus
    problem = driver_problem(found[0]["driver"], found[0]["driver_cuda"], TESTED.torch_cuda)
    if ok:
        assert problem is None
    else:
        assert problem.startswith(f"driver {driver} (CUDA {cuda}) cannot run the stack's CUDA 13.0 build")
        assert "R580" in problem and "cuda-compat-13-0" in problem and "/usr/local/cuda-13.0/compat" in problem
        assert "\n" not in problem


def test_an_old_driver_passes_with_the_forward_compatibility_libcuda_on_the_library_path(tmp_path):
    compat = tmp_path / "cuda-13.0" / "compat"
    compat.mkdir(parents=True)
    for name in ("libcuda.so", "libcuda.so.1", "libcuda.so.580.65.06", "libnvidia-ptxjitcompiler.so.580.65.06"):
        (compat / name).write_bytes(b"")
    path = os.pathsep.join([str(tmp_path / "missing"), str(compat)])
    assert forward_compat_driver(path) == "580.65.06" and forward_compat_driver("") is None
    assert driver_problem("535.183.01", "12.2", "cu130", compat=forward_compat_driver(path)) is None
    assert driver_problem("535.183.01", "13.0", "cu130") is None  # nvidia-smi already reports the compat CUDA
    assert driver_problem("535.183.01", "12.2", "cu128") is not None and driver_problem("575.51.03", "12.9", "cu128") is None
    assert driver_problem(None, None, "cu130") is None and driver_problem("535.1", "12.2", "cu999") is None


@pytest.mark.parametrize("driver, cuda", [("535.183.01", "12.2"), ("570.133.20", "12.8")])
def test_a_driver_too_old_for_cu130_is_refused_in_one_line_before_any_install(driver, cuda, tmp_path, monkeypatch):
    monkeypatch.setenv("GPU_CHECK_NVIDIA_SMI", str(fake_smi(tmp_path, 1, driver=driver, cuda=cuda)))
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    runner = InstallRunner()
    rc = gpu_check.main(["--out", str(tmp_path / "out"), "--venv", str(tmp_path / "venv")], runner=runner)
    assert rc == 2 and runner.calls == [] and not (tmp_path / "out" / "gpu_check.json").exists()
    res = shell(["--out", str(tmp_path / "out")], tmp_path, GPU_CHECK_NVIDIA_SMI=str(fake_smi(tmp_path, 1, driver, cuda)),
                LD_LIBRARY_PATH="")
    assert res.returncode == 2 and res.stdout == "" and len(res.stderr.strip().splitlines()) == 1
    assert res.stderr.startswith(f"gpu_check: driver {driver} (CUDA {cuda})") and "R580" in res.stderr


# ------------------------------------------------------------------ the V2 venv has what its tests need (finding 5)

def test_the_v2_skip_message_builds_a_venv_with_pytest_and_the_eval_extra(tmp_path, monkeypatch):
    _, _, checks = run_main(tmp_path, [], monkeypatch=monkeypatch)
    reason = checks["vllm_v2"]["reason"]
    assert "`pip install -e '.[vllm-v2,eval]' pytest` (vLLM 0.32.0)" in reason
    assert "`pip install -e '.[vllm-latest,eval]' pytest` (0.33.0)" in reason
    help_text = subprocess.run(["bash", str(REPO / "scripts" / "gpu_check.sh"), "--help"], capture_output=True,
                               text=True).stdout
    assert "'.[vllm-v2,eval]' pytest" in help_text and "'.[vllm-latest,eval]' pytest" in help_text


def test_what_the_v2_lane_files_import_is_installed_by_the_v2_venv_command():
    """Each third-party module a V2 lane file imports comes from the command's packages: pytest, the project's
    dependencies and extras it names, or vLLM's own (torch and filelock; vLLM is the extra)."""
    import ast
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    command = v2_venv_command("vllm-v2")
    extras = command.split("[", 1)[1].split("]", 1)[0].split(",")
    tools = command.split("]'", 1)[1].split()
    names = {"vllm", "torch", "filelock"} | set(tools)  # vllm-v2 installs vLLM, which requires torch and filelock
    for req in project["dependencies"] + [r for e in extras for r in project["optional-dependencies"][e]]:
        names.add(req.split(">")[0].split("<")[0].split("=")[0].split("[")[0].strip().replace("-", "_").lower())
    modules = {"math_verify": "math_verify", "yaml": "pyyaml"}
    own = {"tandem", "tandem_app", "tandem_eval", "tandem_backends", "tandem_verl", "vllm_source", "hf_grpo"}
    imported = set()
    for path in sorted(REPO.glob("tests/test_scale_vllm_v2_*.py")) + [REPO / "tests" / "conftest.py"]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    third_party = {m for m in imported if m not in sys.stdlib_module_names and m not in own
                   and not (REPO / "tests" / f"{m}.py").is_file() and m != "__future__"}  # tests/ helpers
    assert "pytest" in third_party and "vllm" in third_party
    assert {modules.get(m, m) for m in third_party} <= names, third_party - names


def test_help_lists_what_gpu_check_proves_with_the_unfinished_ones_marked():
    res = subprocess.run(["bash", str(REPO / "scripts" / "gpu_check.sh"), "--help"], capture_output=True, text=True)
    text = " ".join(res.stdout.split())
    for name, status, what, _ in proofs.PROOFS:
        assert f"{name} [{status}] {' '.join(what.split())}" in text
    done = {name for name, status, *_ in proofs.PROOFS if status == proofs.IMPLEMENTED}
    assert done == {"driver_first", "fp32_ieee_everywhere", "probe_never_stops_others", "v2_venv_has_its_tests"}
    assert {s for _, s, *_ in proofs.PROOFS} == {proofs.IMPLEMENTED, proofs.NOT_YET}
