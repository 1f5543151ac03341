"""scripts/gpu_smoke.sh on a CPU: the dry run's JSON, the wheel folder's checks, and the step runner.

No GPU exists here: the dry run runs what needs none (the wheel list, the machine probe, the CPU
half of the engine comparison and of the handoff evaluation at tiny sizes) and lists the rest;
the GPU mode is driven with a fake nvidia-smi and a fake probe, so what is tested is what the
driver decides from their output: statuses, timeouts, the budget, the report's fields.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("gpu_smoke", REPO / "scripts" / "gpu_smoke.py")
gpu_smoke = importlib.util.module_from_spec(spec)
sys.modules["gpu_smoke"] = gpu_smoke
spec.loader.exec_module(gpu_smoke)

from _tandem_gpu_check import proofs  # noqa: E402  (loaded by gpu_smoke.py)

STEP_NAMES = ["driver", "wheels", "machine", "engine_fp32", "handoff_bf16", "demo_quick"]
STEP_FIELDS = {"name", "status", "seconds", "timeout_s", "reason", "needs_gpu", "details", "log_tail"}


def with_zoo(work: Path, senior: Path, junior: Path) -> Path:
    """WORK/zoo as the probe builds it, from the session's tiny models (the smoke reuses a finished zoo)."""
    for role, src in (("senior", senior), ("junior", junior)):
        shutil.copytree(src, work / "zoo" / role)
    return work


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory, tiny_dir, tiny_dir_seed1):
    tmp = tmp_path_factory.mktemp("smoke")
    work = with_zoo(tmp / "work", tiny_dir, tiny_dir_seed1)
    res = subprocess.run(["bash", str(REPO / "scripts" / "gpu_smoke.sh"), "--dry-run", "--out", str(tmp / "out"),
                          "--work", str(work), "--wheels", str(tmp / "no-wheels")],
                         capture_output=True, text=True, timeout=300, env={**__import__("os").environ,
                                                                           "GPU_SMOKE_PYTHON": sys.executable})
    return res, json.loads((tmp / "out" / "gpu_smoke.json").read_text())


def test_the_dry_run_runs_the_cpu_halves_and_writes_one_json_with_every_field(dry_run):
    res, report = dry_run
    assert res.returncode == 0, res.stdout + res.stderr
    assert res.stdout.strip() == report["summary"] and report["summary"].startswith("gpu smoke: 3 passed, 0 failed, 3 skipped")
    assert set(report) == {"format", "mode", "started_utc", "finished_utc", "wall_seconds", "budget_seconds", "machine",
                           "wheels", "steps", "results", "would_run_on_gpu", "gpu_check_proofs", "summary"}
    assert report["mode"] == "dry-run" and report["budget_seconds"] == gpu_smoke.DEFAULT_BUDGET
    assert set(report["machine"]) == {"gpu", "capability", "gpu_count", "driver", "driver_cuda", "torch", "torch_cuda",
                                      "python"}
    steps = {s["name"]: s for s in report["steps"]}
    assert [s["name"] for s in report["steps"]] == STEP_NAMES and all(set(s) == STEP_FIELDS for s in steps.values())
    assert {n: s["status"] for n, s in steps.items()} == {
        "driver": "skipped", "wheels": "skipped", "machine": "passed", "engine_fp32": "passed",
        "handoff_bf16": "passed", "demo_quick": "skipped"}
    assert "no wheel folder" in steps["wheels"]["reason"] and "--prepare" in steps["wheels"]["reason"]
    assert steps["wheels"]["details"]["listed"] == len(gpu_smoke.read_list())
    engine = steps["engine_fp32"]
    assert engine["reason"].startswith("CPU half:") and engine["details"]["modes"] == ["paired", "lockstep", "lazy"]
    assert engine["details"]["tokens"] > 0 and 0 < engine["details"]["senior_token_fraction"] < 1
    handoff = steps["handoff_bf16"]["details"]
    assert handoff["dtype"] == "float32" and 0 <= handoff["accuracy"] <= 1 and "--device cpu" in handoff["command"]
    assert report["machine"]["torch"] and report["machine"]["gpu"] is None
    assert report["results"] == {"engine_fp32_equal": False, "handoff_bf16_accuracy": None,
                                 "demo_quick_wall_seconds": None}  # nothing claimed for the GPU


def test_the_dry_run_lists_what_it_would_run_on_the_gpu_and_what_gpu_check_proves(dry_run):
    _, report = dry_run
    assert [w["name"] for w in report["would_run_on_gpu"]] == ["driver", "engine_fp32", "handoff_bf16", "demo_quick"]
    assert all(w["runs"] and w["timeout_s"] > 0 for w in report["would_run_on_gpu"])
    assert report["gpu_check_proofs"] == proofs.as_records()
    statuses = {p["name"]: p["status"] for p in report["gpu_check_proofs"]}
    assert statuses["driver_first"] == "implemented" and statuses["merge_memory"] == "not implemented yet"
    assert len(statuses) == 10  # every check issue 61's deliverable 3 names


def test_the_wheel_list_carries_the_projects_dependencies_within_60_mib():
    pins = gpu_smoke.read_list()
    assert gpu_smoke.list_problems(pins) == []
    assert {"transformers", "tokenizers", "safetensors", "omegaconf", "math-verify", "tqdm", "matplotlib",
            "pyyaml", "huggingface-hub", "antlr4-python3-runtime"} <= set(pins)
    assert not set(gpu_smoke.NOT_CARRIED) & set(pins) and "torch" not in pins
    assert [n for n, (_, sdist) in pins.items() if sdist] == ["antlr4-python3-runtime"]  # PyPI has no wheel of 4.9.3
    header = gpu_smoke.WHEEL_LIST.read_text()
    assert "52,837,965 bytes" in header and 52_837_965 <= gpu_smoke.LIMIT_BYTES == 60 * 2**20


def write_wheel(folder: Path, name: str, version: str, tag: str = "py3-none-any") -> Path:
    """A one-module wheel pip installs (scripts/gpu_smoke.sh only checks and installs, never imports, it)."""
    module, dist = name.replace("-", "_"), f"{name.replace('-', '_')}-{version}"
    path = folder / f"{dist}-{tag}.whl"
    files = {f"{module}/__init__.py": f"VERSION = {version!r}\n",
             f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{dist}.dist-info/WHEEL": f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n"}
    record = "".join(f"{n},,\n" for n in files) + f"{dist}.dist-info/RECORD,,\n"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for n, text in {**files, f"{dist}.dist-info/RECORD": record}.items():
            z.writestr(n, text)
    return path


@pytest.fixture
def small_list(tmp_path, monkeypatch):
    """A two-wheel list and its folder, as --prepare leaves them (the manifest written by its code)."""
    listed = tmp_path / "wheels.txt"
    listed.write_text("# two wheels\nsmoke-one==1.0\nsmoke_two==2.0  # sdist\n")
    monkeypatch.setattr(gpu_smoke, "WHEEL_LIST", listed)
    monkeypatch.setattr(gpu_smoke, "list_problems", lambda pins: [])  # the real requirements are not in this list
    folder = tmp_path / "wheels"
    write_wheel(folder, "smoke-one", "1.0")
    write_wheel(folder, "smoke_two", "2.0")
    write_wheel(folder, "smoke-one", "0.9")  # an earlier list's: removed
    gpu_smoke.write_manifest(folder, gpu_smoke.read_list())
    return folder


def wheels_step(folder: Path, tmp_path: Path, dry_run: bool = True):
    step = gpu_smoke.Step("wheels", 60)
    args = gpu_smoke.parse_args(["--wheels", str(folder)])
    info = gpu_smoke.wheels_step(step, args, tmp_path / "work", dry_run)
    return step, info


def test_a_prepared_folder_passes_and_pip_installs_it_for_cpython_312(small_list, tmp_path):
    assert sorted(p.name for p in small_list.glob("*.whl")) == ["smoke_one-1.0-py3-none-any.whl",
                                                                 "smoke_two-2.0-py3-none-any.whl"]
    step, info = wheels_step(small_list, tmp_path)
    assert step.status == "passed", step.reason + step.log_tail
    assert "pip installs every one for CPython 3.12" in step.reason and info["files"] == 2
    assert not (tmp_path / "work" / "site-check").exists()  # checked, not kept


def test_gpu_mode_installs_the_wheels_into_work_site(small_list, tmp_path):
    step, _ = wheels_step(small_list, tmp_path, dry_run=False)
    assert step.status == "passed" and (tmp_path / "work" / "site" / "smoke_two" / "__init__.py").is_file()


@pytest.mark.parametrize("breakage, words", [
    ("tampered", "differs from the manifest's sha256"),
    ("missing", "is missing"),
    ("over the limit", "over the 0 MiB limit"),
    ("other list", "differs from scripts/gpu_smoke_wheels.txt"),
    ("not cp312", "is not for CPython 3.12"),
])
def test_a_folder_that_cannot_serve_fails_the_wheels_step_and_names_the_fix(breakage, words, small_list, tmp_path,
                                                                           monkeypatch):
    one = small_list / "smoke_one-1.0-py3-none-any.whl"
    if breakage == "tampered":
        one.write_bytes(one.read_bytes()[:-1] + b"x")
    elif breakage == "missing":
        one.unlink()
    elif breakage == "over the limit":
        monkeypatch.setattr(gpu_smoke, "LIMIT_BYTES", 100)
    elif breakage == "other list":
        gpu_smoke.WHEEL_LIST.write_text("smoke-one==1.0\nsmoke_two==2.1\n")
    else:
        one.unlink()
        write_wheel(small_list, "smoke-one", "1.0", tag="cp311-cp311-manylinux_2_17_x86_64")
        gpu_smoke.write_manifest(small_list, gpu_smoke.read_list())
    step, _ = wheels_step(small_list, tmp_path)
    assert step.status == "failed" and words in step.reason, step.reason
    assert breakage == "over the limit" or "--prepare --wheels" in step.reason


# ------------------------------------------------------------------ GPU mode, with a fake GPU and fake probes

FAKE_PROBE = r'''
import json, sys, time
step = sys.argv[1]
if step == "machine":
    print("GPU_SMOKE_RESULT " + json.dumps({"passed": True, "reason": "torch on NVIDIA H100", "gpu": "NVIDIA H100 80GB HBM3",
          "capability": "9.0", "torch": "2.11.0+cu130", "torch_cuda": "13.0", "python": "3.12.3", "device_count": 1}))
elif step == "engine":
    sys.exit(3)  # a crash: no result line
elif step == "handoff":
    time.sleep(60)
else:
    print("GPU_SMOKE_RESULT " + json.dumps({"passed": True, "reason": "quick demo", "wall_seconds": 71.5}))
'''


def fake_smi(tmp_path: Path, driver: str = "580.159.04", cuda: str = "13.0") -> Path:
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir(parents=True, exist_ok=True)
    smi.write_text('#!/usr/bin/env bash\ncase "$1" in --query-gpu*) echo "NVIDIA H100 80GB HBM3, 81559, ' + driver
                   + '" ;; *) echo "| NVIDIA-SMI ' + driver + '  Driver Version: ' + driver + '  CUDA Version: ' + cuda
                   + ' |" ;; esac\n')
    smi.chmod(0o755)
    return smi


def gpu_run(tmp_path, monkeypatch, argv=(), driver="580.159.04", cuda="13.0", min_step=1.0):
    probe = tmp_path / "probe.py"
    probe.write_text(FAKE_PROBE)
    monkeypatch.setattr(gpu_smoke, "PROBE", probe)
    monkeypatch.setattr(gpu_smoke, "STEPS", {**gpu_smoke.STEPS, "handoff_bf16": (2, True, "sleeps")})
    monkeypatch.setattr(gpu_smoke, "MIN_STEP", min_step)
    monkeypatch.setenv("GPU_SMOKE_NVIDIA_SMI", str(fake_smi(tmp_path, driver, cuda)))
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    rc = gpu_smoke.main(["--out", str(tmp_path / "out"), "--work", str(tmp_path / "work"),
                         "--wheels", str(tmp_path / "no-wheels"), *argv])
    report = json.loads((tmp_path / "out" / "gpu_smoke.json").read_text())
    return rc, report, {s["name"]: s for s in report["steps"]}


def test_a_failing_step_never_stops_the_others_and_each_is_recorded(tmp_path, monkeypatch):
    rc, report, steps = gpu_run(tmp_path, monkeypatch)
    assert rc == 1 and report["mode"] == "gpu" and [s["name"] for s in report["steps"]] == STEP_NAMES
    assert {n: s["status"] for n, s in steps.items()} == {
        "driver": "passed", "wheels": "failed", "machine": "passed", "engine_fp32": "failed",
        "handoff_bf16": "failed", "demo_quick": "passed"}
    assert "no wheel folder" in steps["wheels"]["reason"]
    assert steps["engine_fp32"]["reason"] == "the probe exited 3 with no result"  # its log is empty
    assert steps["handoff_bf16"]["reason"] == "timed out after 2 s" and steps["handoff_bf16"]["seconds"] < 30
    assert "timed out after 2 s" in steps["handoff_bf16"]["log_tail"]
    assert report["machine"] == {"gpu": "NVIDIA H100 80GB HBM3", "capability": "9.0", "gpu_count": 1,
                                 "driver": "580.159.04", "driver_cuda": "13.0", "torch": "2.11.0+cu130",
                                 "torch_cuda": "13.0", "python": "3.12.3"}
    assert report["results"]["demo_quick_wall_seconds"] == 71.5 and report["would_run_on_gpu"] == []
    assert "(failed: wheels, engine_fp32, handoff_bf16)" in report["summary"]


def test_an_old_driver_fails_the_driver_step_in_one_line_with_the_fix(tmp_path, monkeypatch):
    _, _, steps = gpu_run(tmp_path, monkeypatch, ["--only", "driver"], driver="570.133.20", cuda="12.8")
    assert steps["driver"]["status"] == "failed" and "\n" not in steps["driver"]["reason"]
    assert steps["driver"]["reason"].startswith("driver 570.133.20 (CUDA 12.8) cannot run") and "R580" in steps["driver"]["reason"]
    assert all(s["reason"] == "not selected (--only)" for n, s in steps.items() if n != "driver")


def test_a_spent_budget_skips_the_remaining_steps_with_the_reason(tmp_path, monkeypatch):
    rc, report, steps = gpu_run(tmp_path, monkeypatch, ["--budget", "12"], min_step=15.0)
    assert rc == 0 and report["budget_seconds"] == 12
    assert all(s["status"] == "skipped" and s["reason"].startswith("time budget spent") for s in steps.values())


def test_help_explains_the_steps_and_bad_arguments_fail_in_one_line(tmp_path):
    res = subprocess.run(["bash", str(REPO / "scripts" / "gpu_smoke.sh"), "--help"], capture_output=True, text=True,
                         env={**__import__("os").environ, "GPU_SMOKE_PYTHON": sys.executable})
    assert res.returncode == 0 and all(name in res.stdout for name in STEP_NAMES)
    assert all(name in res.stdout for name, *_ in proofs.PROOFS) and "not implemented yet" in res.stdout
    for argv, words in ((["--budget", "0"], "--budget"), (["--dry-run", "--prepare"], "not allowed with"),
                        (["--only", "nope"], "invalid choice")):
        bad = subprocess.run(["bash", str(REPO / "scripts" / "gpu_smoke.sh"), *argv, "--out", str(tmp_path)],
                             capture_output=True, text=True, env={**__import__("os").environ,
                                                                  "GPU_SMOKE_PYTHON": sys.executable})
        assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and words in bad.stderr, bad.stderr
