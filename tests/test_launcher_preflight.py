"""The launchers' preflight (verl/preflight.py): an attention implementation that cannot be imported stops the run before Ray.

The kernel packages are stood in for by fake modules on PYTHONPATH (one that imports,
one that raises like a wheel built for another torch), and vLLM by a distribution record
of a chosen version, so the tests mean the same whether or not flash-attn or vLLM is
installed here. The launcher tests put a `python` first on
PATH that runs the preflight for real and only records the entry point's call.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PREFLIGHT = REPO / "verl" / "preflight.py"
LAUNCHERS = [REPO / "verl" / "run_tandem_native_grpo_deepscaler.sh", REPO / "verl" / "run_vanilla_grpo_deepscaler.sh"]
KEY = "actor_rollout_ref.model.override_config.attn_implementation"

spec = importlib.util.spec_from_file_location("verl_preflight", PREFLIGHT)
preflight = importlib.util.module_from_spec(spec)
spec.loader.exec_module(preflight)


def fake_kernels(root: Path, *, broken: bool, trl_value_head: bool = True, vllm: str = "0.28.0") -> Path:
    """A directory holding stand-ins for flash_attn, flash_attn_interface, trl and vLLM's distribution record."""
    dist = root / f"vllm-{vllm}.dist-info"
    dist.mkdir(parents=True, exist_ok=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {vllm}\n")
    body = "raise ImportError('undefined symbol: _ZN3c10 (built for another torch)')\n" if broken else "OK = True\n"
    for name in ("flash_attn", "flash_attn_interface"):
        (root / name).mkdir(parents=True, exist_ok=True)
        (root / name / "__init__.py").write_text(body)
    (root / "trl").mkdir(parents=True, exist_ok=True)
    (root / "trl" / "__init__.py").write_text("AutoModelForCausalLMWithValueHead = object\n" if trl_value_head else "")
    return root


def run_preflight(args: list[str], path: Path, **env_vars: str) -> subprocess.CompletedProcess:
    env = {**{k: v for k, v in os.environ.items() if k != "VLLM_USE_V2_MODEL_RUNNER"}, "PYTHONPATH": str(path),
           **env_vars}
    return subprocess.run([sys.executable, str(PREFLIGHT), *args], env=env, capture_output=True, text=True, timeout=60)


def test_requested_is_verls_default_the_last_override_or_the_default_again_after_deletion():
    assert preflight.requested(["data.x=1"]) == "flash_attention_2"
    assert preflight.requested([f"++{KEY}=sdpa", f"{KEY}=eager"]) == "eager"
    assert preflight.requested([f"+{KEY}='sdpa'"]) == "sdpa"
    assert preflight.requested([f"++{KEY}=sdpa", f"~{KEY}"]) == "flash_attention_2"
    assert preflight.requested([f"{KEY}x=sdpa"]) == "flash_attention_2"  # another key


@pytest.mark.parametrize("impl", ["sdpa", "eager", "flex_attention"])
def test_torch_implementations_pass(impl, tmp_path):
    res = run_preflight([f"++{KEY}={impl}"], fake_kernels(tmp_path, broken=True))
    assert res.returncode == 0 and res.stderr == ""


@pytest.mark.parametrize("args", [[], [f"++{KEY}=flash_attention_2"], [f"++{KEY}=flash_attention_3"]])
def test_a_flash_attention_that_cannot_be_imported_fails_in_one_line_naming_key_and_fix(args, tmp_path):
    res = run_preflight(args, fake_kernels(tmp_path, broken=True))
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert KEY in lines[0] and f"++{KEY}=sdpa" in lines[0] and "another torch" in lines[0]


@pytest.mark.parametrize("impl", ["flash_attention_2", "flash_attention_3"])
def test_an_importable_flash_attention_passes(impl, tmp_path):
    assert run_preflight([f"{KEY}={impl}"], fake_kernels(tmp_path, broken=False)).returncode == 0


def test_an_unknown_implementation_is_refused(tmp_path):
    res = run_preflight([f"{KEY}=flash_attn2"], fake_kernels(tmp_path, broken=False))
    assert res.returncode == 2 and "flash_attn2" in res.stderr and "sdpa" in res.stderr


def python_shim(tmp_path: Path) -> Path:
    """bin/python: the preflight runs for real; any other call is only recorded in $CALLS."""
    shim = tmp_path / "bin" / "python"
    shim.parent.mkdir(parents=True, exist_ok=True)
    shim.write_text(f'#!/usr/bin/env bash\nprintf "%s\\n" "$*" >> "$CALLS"\n'
                    f'case "$1" in */preflight.py) exec "{sys.executable}" "$@" ;; esac\nexit 0\n')
    shim.chmod(0o755)
    return shim.parent


def run_launcher(script: Path, tmp_path: Path, *extra: str, broken: bool):
    calls = tmp_path / "calls.txt"
    env = {**os.environ, "PATH": f"{python_shim(tmp_path)}:{os.environ['PATH']}", "CALLS": str(calls),
           "PYTHONPATH": str(fake_kernels(tmp_path / "kernels", broken=broken))}
    env.pop("WANDB_API_KEY", None)
    res = subprocess.run(["bash", str(script), *extra], env=env, capture_output=True, text=True, timeout=60)
    return res, calls.read_text().splitlines() if calls.exists() else []


@pytest.mark.parametrize("script", LAUNCHERS, ids=lambda p: p.stem)
def test_launchers_default_to_sdpa_and_run_the_preflight_before_the_entry_point(script, tmp_path):
    res, calls = run_launcher(script, tmp_path, "trainer.total_epochs=1", broken=True)
    assert res.returncode == 0, res.stderr
    assert len(calls) == 2 and calls[0].split()[0].endswith("preflight.py")
    assert f"++{KEY}=sdpa" in calls[0].split() and "trainer.total_epochs=1" in calls[0].split()
    assert f"++{KEY}=sdpa" in calls[1].split()  # the entry point gets the same choice


@pytest.mark.parametrize("script", LAUNCHERS, ids=lambda p: p.stem)
def test_launchers_stop_before_the_entry_point_when_flash_attn_is_not_importable(script, tmp_path):
    res, calls = run_launcher(script, tmp_path, f"{KEY}=flash_attention_2", broken=True)
    assert res.returncode == 2
    assert len(res.stderr.strip().splitlines()) == 1 and KEY in res.stderr
    assert len(calls) == 1  # the preflight only: Ray never started


def test_a_trl_without_verls_value_head_class_stops_the_run_in_one_line(tmp_path):
    res = run_preflight([f"++{KEY}=sdpa"], fake_kernels(tmp_path, broken=False, trl_value_head=False))
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and "AutoModelForCausalLMWithValueHead" in res.stderr
    assert "pip uninstall trl" in res.stderr


@pytest.mark.parametrize("version", ["0.28.0", "0.28.0+cpu", "0.24.0"])
def test_the_tested_and_the_accepted_vllm_pass(version, tmp_path):
    assert run_preflight([f"++{KEY}=sdpa"], fake_kernels(tmp_path, broken=False, vllm=version)).returncode == 0


@pytest.mark.parametrize("version", ["0.26.1", "0.34.0"])
def test_any_other_vllm_stops_the_run_in_one_line_naming_the_releases(version, tmp_path):
    res = run_preflight([f"++{KEY}=sdpa"], fake_kernels(tmp_path, broken=False, vllm=version))
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert f"vLLM {version} is neither tested nor accepted" in res.stderr
    assert "0.28.0 (tested" in res.stderr and "0.24.0 (accepted" in res.stderr and "vllm==0.28.0" in res.stderr


def test_a_request_for_the_v2_model_runner_stops_the_run_in_one_line(tmp_path):
    res = run_preflight([f"++{KEY}=sdpa"], fake_kernels(tmp_path, broken=False), VLLM_USE_V2_MODEL_RUNNER="1")
    assert res.returncode == 2 and res.stderr.count("\n") == 1
    assert "V2 model runner" in res.stderr and "unset VLLM_USE_V2_MODEL_RUNNER" in res.stderr
    assert run_preflight([f"++{KEY}=sdpa"], fake_kernels(tmp_path, broken=False),
                         VLLM_USE_V2_MODEL_RUNNER="0").returncode == 0


@pytest.mark.parametrize("script", LAUNCHERS, ids=lambda p: p.stem)
def test_both_launchers_hand_the_entry_point_the_v1_runner_pin(script, tmp_path):
    """The launchers export VLLM_USE_V2_MODEL_RUNNER=0 before Ray starts: both arms on vLLM's V1 runner."""
    shim = python_shim(tmp_path)
    (shim / "python").write_text((shim / "python").read_text().replace(
        'exit 0', 'echo "runner=$VLLM_USE_V2_MODEL_RUNNER" >> "$CALLS"; exit 0'))
    calls = tmp_path / "calls.txt"
    env = {**{k: v for k, v in os.environ.items() if k != "VLLM_USE_V2_MODEL_RUNNER"},
           "PATH": f"{shim}:{os.environ['PATH']}", "CALLS": str(calls),
           "PYTHONPATH": str(fake_kernels(tmp_path / "kernels", broken=False))}
    res = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert calls.read_text().splitlines()[-1] == "runner=0"
