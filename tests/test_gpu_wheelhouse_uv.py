"""The wheelhouse's uv route: a resolve for CPython 3.12 on manylinux x86_64 run by this Python (3.11 in CI).

These tests need PyPI: uv itself comes from there (once, into the cache), the stack resolves
against it, and one build downloads a few small wheels. In CI ($CI set) an unreachable PyPI
fails them, since nothing else checks the route a GPU node's wheelhouse is built with;
elsewhere they are skipped with that reason. The stack's resolve takes about 30 s.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import urllib.request
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "gpu_wheelhouse.sh"
spec = importlib.util.spec_from_file_location("gpu_wheelhouse", REPO / "scripts" / "gpu_wheelhouse.py")
wh = importlib.util.module_from_spec(spec)
sys.modules.setdefault("gpu_wheelhouse", wh)
spec.loader.exec_module(wh)
import _tandem_wheelhouse.uv as uv_route  # noqa: E402  (importable once the facade has loaded the package)

stack = wh.load_stack()
TARGET = "3.12"  # the GPU image's Python, which this machine need not have
GPU_PRESENT = {"torch": "2.11.0+cu130", "numpy": "2.2.6", "transformers": "4.57.6", "nvidia-cudnn-cu13": "9.19.0.56"}


@pytest.fixture(scope="module")
def uv() -> str:
    """The pinned uv, fetched from PyPI once; a CI run without PyPI fails here, a local one skips."""
    try:
        urllib.request.urlopen("https://pypi.org/simple/uv/", timeout=20).close()
    except OSError as e:
        reason = f"needs PyPI for uv and the stack's resolve (pypi.org unreachable: {e})"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return uv_route.uv_binary()


def write_wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = (),
                tag: str = "py3-none-any") -> Path:
    """A wheel with one module; `tag` goes into its file name, which is what a resolver matches."""
    dist = f"{name.replace('-', '_')}-{version}"
    meta = "".join([f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
                    *(f"Requires-Dist: {r}\n" for r in requires)])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{dist}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{name.replace('-', '_')}/__init__.py", f"VERSION = {version!r}\n")
        z.writestr(f"{dist}.dist-info/METADATA", meta)
        z.writestr(f"{dist}.dist-info/WHEEL", f"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: {tag}\n")
        z.writestr(f"{dist}.dist-info/RECORD", "")
    return path


def target(requirements: list[str], present: dict | None = None):
    return wh.Target(TARGET, present or {}, stack.TESTED, "wheelhouse", [], requirements, ["pip"])


def test_markers_and_tags_are_the_targets_not_this_interpreters(tmp_path, uv):
    # tiny-a needs tiny-m on Python 3.12 only, and tiny-d ships a wheel per CPython: a resolve run by
    # pip here would drop tiny-m and pick this interpreter's tiny-d; uv answers for 3.12.
    index = tmp_path / "index"
    write_wheel(index, "tiny-a", "1.0", ("tiny-b", "tiny-d", 'tiny-m; python_version >= "3.12"'))
    for version in ("1.0", "2.0"):
        write_wheel(index, "tiny-b", version)
    write_wheel(index, "tiny-m", "1.0")
    for tag in ("cp311-cp311-manylinux_2_17_x86_64", "cp312-cp312-manylinux_2_17_x86_64", "py3-none-any"):
        write_wheel(index, "tiny-d", "1.0", tag=tag)
    resolver = uv_route.Uv(uv, index_args=["--no-index", "--find-links", str(index)])
    manifest = wh.build(tmp_path / "wh", target(["tiny-a"], {"tiny-b": "1.0"}), resolver)
    assert [(e["name"], e["file"]) for e in manifest["files"]] == [
        ("tiny-a", "tiny_a-1.0-py3-none-any.whl"), ("tiny-d", "tiny_d-1.0-cp312-cp312-manylinux_2_17_x86_64.whl"),
        ("tiny-m", "tiny_m-1.0-py3-none-any.whl")]
    assert manifest["skipped_present"] == [{"name": "tiny-b", "version": "1.0"}]
    assert manifest["resolver"] == {"name": "uv", "version": uv_route.UV_VERSION}


def test_only_the_present_pins_a_conflict_names_are_dropped(tmp_path, uv, capsys):
    index = tmp_path / "index"
    write_wheel(index, "tiny-a", "1.0", ("tiny-b>=2",))
    for name in ("tiny-b", "tiny-c"):
        for version in ("1.0", "2.0"):
            write_wheel(index, name, version)
    resolver = uv_route.Uv(uv, index_args=["--no-index", "--find-links", str(index)])
    manifest = wh.build(tmp_path / "wh", target(["tiny-a", "tiny-c"], {"tiny-b": "1.0", "tiny-c": "1.0"}), resolver)
    assert manifest["present_dropped"] == ["tiny-b"] and manifest["present_constraints"] == "some"
    assert [(e["name"], e["version"]) for e in manifest["files"]] == [("tiny-a", "1.0"), ("tiny-b", "2.0")]
    assert manifest["skipped_present"] == [{"name": "tiny-c", "version": "1.0"}]  # its pin held
    assert "the --present pins of tiny-b conflict with the stack" in capsys.readouterr().out


def test_resolve_only_for_python_312_from_this_python_matches_the_stack_and_the_present_file(tmp_path, uv):
    present = tmp_path / "freeze.txt"
    present.write_text("".join(f"{name}=={version}\n" for name, version in GPU_PRESENT.items()))
    out = tmp_path / "lock"
    res = subprocess.run(["bash", str(SCRIPT), "--out", str(out), "--resolve-only", "--python", TARGET,
                          "--present", str(present)], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "GPU_WHEELHOUSE_LAUNCHER_PYTHON": sys.executable})
    assert res.returncode == 0, res.stderr
    assert sorted(p.name for p in out.iterdir()) == ["lock.txt", "plan.json"]  # nothing downloaded
    plan = json.loads((out / "plan.json").read_text())
    release = stack.release_for_torch(GPU_PRESENT["torch"])
    assert (plan["vllm"], plan["python"], plan["torch_source"]) == (release.vllm, TARGET, "present")
    assert plan["resolver"] == {"name": "uv", "version": uv_route.UV_VERSION}
    pins = dict(line.split()[0].split("==") for line in (out / "lock.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    for requirement in wh.stack_requirements(stack, release):  # every stack pin, exactly
        name, version = requirement.split("==")
        assert pins[name] == version, requirement
    assert pins["numpy"] == GPU_PRESENT["numpy"]  # the image's numpy suits the stack and is kept
    # antlr4-python3-runtime 4.9.3 has only an sdist: built into a pure wheel, so hydra-core stays at 1.3
    assert plan["built_from_sdist"] == ["antlr4-python3-runtime==4.9.3"] and pins["hydra-core"].startswith("1.3.")
    assert plan["present_dropped"] == ["transformers"]  # 4.57.6 cannot stay beside the stack's 5.10.4
    fetched = {f["name"]: f for f in plan["files"]}
    assert "torch" not in fetched and "numpy" not in fetched and "nvidia-cudnn-cu13" not in fetched
    assert {s["name"] for s in plan["skipped_present"]} == {"torch", "numpy", "nvidia-cudnn-cu13"}
    assert fetched["vllm"]["file"].startswith(f"vllm-{release.vllm}-") and "x86_64" in fetched["vllm"]["file"]
    for f in plan["files"]:
        assert f["file"].endswith(".whl") and f["bytes"] > 0, f
        assert f["name"] == "antlr4-python3-runtime" or (len(f["sha256"]) == 64 and f["url"].startswith("https://")), f
        assert not any(tag in f["file"] for tag in ("-cp311-cp311-", "-cp313-", "aarch64", "macosx", "musllinux",
                                                    "win_")), f["file"]  # cp3N-abi3 (N < 12) suits 3.12
    assert plan["total_bytes"] == sum(f["bytes"] for f in plan["files"]) > 2**30


@pytest.mark.parametrize("release", stack.ENGINE_RELEASES, ids=lambda r: r.vllm)
def test_each_engine_only_release_resolves_for_python_312_with_its_pins_and_no_verl(tmp_path, uv, release):
    """`--vllm 0.33.0` (and 0.32.0): the V2 engine's wheelhouse, every pin of stack.py exactly, vLLM's own CUDA wheel."""
    out = tmp_path / "lock"
    res = subprocess.run(["bash", str(SCRIPT), "--out", str(out), "--resolve-only", "--python", TARGET,
                          "--vllm", release.vllm], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "GPU_WHEELHOUSE_LAUNCHER_PYTHON": sys.executable})
    assert res.returncode == 0, res.stderr
    plan = json.loads((out / "plan.json").read_text())
    assert (plan["vllm"], plan["python"], plan["extras"]) == (release.vllm, TARGET, ["eval"])
    pins = dict(line.split()[0].split("==") for line in (out / "lock.txt").read_text().splitlines()
                if line and not line.startswith("#"))
    for requirement in wh.stack_requirements(stack, release):
        name, version = requirement.split("==")
        assert pins[name] == version, requirement
    assert "verl" not in pins and "pytest" in pins and "math-verify" in pins
    fetched = {f["name"]: f for f in plan["files"]}
    assert fetched["vllm"]["file"] == f"vllm-{release.vllm}-cp38-abi3-manylinux_2_28_x86_64.whl"
    assert fetched["torch"]["file"].startswith(f"torch-{release.torch}-cp312-cp312-manylinux")


def test_a_real_download_is_split_and_joined_back_to_the_sha256_and_size_the_index_gave(tmp_path, uv):
    small = ["idna==3.10", "six==1.17.0", "PyYAML==6.0.2"]  # about 0.9 MB; PyYAML has a wheel per CPython
    resolver = uv_route.Uv(uv)
    out = tmp_path / "wh"
    manifest = wh.build(out, target(small), resolver, part_bytes=256 * 1024)
    dists = {d.file: d for d in resolver.resolve(TARGET, small, [])}
    yaml = next(e for e in manifest["files"] if e["name"].lower() == "pyyaml")
    assert "cp312-cp312-manylinux" in yaml["file"] and len(yaml["parts"]) >= 2
    assert sorted(e["name"].lower() for e in manifest["files"]) == ["idna", "pyyaml", "six"]
    res = subprocess.run(["bash", str(SCRIPT), "--join", str(out)], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "GPU_WHEELHOUSE_LAUNCHER_PYTHON": sys.executable})
    assert res.returncode == 0, res.stderr
    for e in manifest["files"]:
        data = (out / e["file"]).read_bytes()
        assert (hashlib.sha256(data).hexdigest(), len(data)) == (e["sha256"], e["bytes"])
        assert (dists[e["file"]].sha256, dists[e["file"]].bytes) == (e["sha256"], e["bytes"])
    assert not list(out.glob("*.part*"))
