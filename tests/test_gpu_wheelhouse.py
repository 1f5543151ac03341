"""scripts/gpu_wheelhouse.sh on CPU: the requirement list, the manifest, skip-what-is-present, parts and join.

No network and no GPU stack: pip's real resolver (the interpreter route) and downloader run
against wheels this file writes into a local folder (`--no-index --find-links`), or a fake
resolver hands back a fixed closure of GPU-stack names with small stand-in files. The install
test puts a wheelhouse built for this interpreter, split into parts and joined again, into a
folder with `pip install --no-index` and imports from it. The uv route, which needs uv from
PyPI, is tests/test_gpu_wheelhouse_uv.py.
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "gpu_wheelhouse.sh"
spec = importlib.util.spec_from_file_location("gpu_wheelhouse", REPO / "scripts" / "gpu_wheelhouse.py")
wh = importlib.util.module_from_spec(spec)
sys.modules["gpu_wheelhouse"] = wh  # dataclasses look their module up there
spec.loader.exec_module(wh)
stack = wh.load_stack()
import _tandem_wheelhouse.build as building  # noqa: E402  (importable once the facade has loaded the package)
import _tandem_wheelhouse.cli as cli  # noqa: E402
import _tandem_wheelhouse.pip_route as pip_route  # noqa: E402
import _tandem_wheelhouse.tags as tags  # noqa: E402
import _tandem_wheelhouse.target as targeting  # noqa: E402
HOST_PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"


def shell(*args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "GPU_WHEELHOUSE_LAUNCHER_PYTHON": sys.executable, **env})


def one_line_error(res: subprocess.CompletedProcess, *words: str) -> None:
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpu_wheelhouse: "), res.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


def write_wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    """A pure-Python wheel with one module that knows its version."""
    module, dist = name.replace("-", "_"), f"{name.replace('-', '_')}-{version}"
    path = folder / f"{dist}-py3-none-any.whl"
    meta = "".join([f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
                    *(f"Requires-Dist: {r}\n" for r in requires)])
    files = {f"{module}/__init__.py": f"VERSION = {version!r}\n", f"{dist}.dist-info/METADATA": meta,
             f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = "".join(f"{n},sha256=,{len(t)}\n" for n, t in files.items()) + f"{dist}.dist-info/RECORD,,\n"
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as z:
        for n, text in {**files, f"{dist}.dist-info/RECORD": record}.items():
            z.writestr(n, text)
    return path


def write_sdist(folder: Path, name: str, version: str) -> Path:
    """A pure-Python setuptools sdist (no wheel of it exists)."""
    module, base = name.replace("-", "_"), f"{name.replace('-', '_')}-{version}"
    files = {"pyproject.toml": ('[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n'
                                f'[project]\nname = "{name}"\nversion = "{version}"\n'),
             "PKG-INFO": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{module}/__init__.py": f"VERSION = {version!r}\n"}
    path = folder / f"{base}.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for n, text in files.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{base}/{n}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


@pytest.fixture(scope="module")
def index(tmp_path_factory) -> Path:
    """A local 'index': tiny-a 1.0 needs tiny-b, which exists as 1.0 and 2.0."""
    folder = tmp_path_factory.mktemp("index")
    write_wheel(folder, "tiny-a", "1.0", ("tiny-b",))
    write_wheel(folder, "tiny-b", "1.0")
    write_wheel(folder, "tiny-b", "2.0")
    return folder


def local_pip(index: Path):
    return pip_route.Pip(["--no-index", "--find-links", str(index)], build_isolation=False)


def tiny_target(present: dict | None = None, python: str = HOST_PYTHON):
    return wh.Target(python, present or {}, stack.TESTED, "wheelhouse", ["tiny-a"], ["tiny-a"], ["pip"])


class FakePip:
    """A fixed closure of GPU-stack names; download writes a small stand-in for each file."""

    def __init__(self, sizes: dict[str, int] | None = None):
        self.sizes, self.calls = sizes or {}, []

    def content(self, file: str) -> bytes:
        seed = hashlib.sha256(file.encode()).digest()
        n = self.sizes.get(file, 1000)
        return (seed * (n // len(seed) + 1))[:n]

    def dist(self, name: str, version: str) -> wh.Dist:
        file = f"{name.replace('-', '_')}-{version}-py3-none-manylinux_2_28_x86_64.whl"
        return wh.Dist(name, version, file, f"https://files.example/{file}", hashlib.sha256(self.content(file)).hexdigest())

    def resolve(self, python, requirements, constraints):
        self.calls.append(("resolve", python, list(requirements), list(constraints)))
        pins = [r.split("==") for r in requirements if "==" in r and "[" not in r]
        return [self.dist(n, v) for n, v in pins] + [self.dist("nvidia-cudnn-cu13", "9.19.0.56"),
                                                     self.dist("numpy", "2.3.5")]

    def download(self, python, dists, dest):
        self.calls.append(("download", [d.file for d in dists]))
        for d in dists:
            (dest / d.file).write_bytes(self.content(d.file))


# ------------------------------------------------------------------------- what it asks for

def test_the_requirements_are_stack_py_and_pyproject_not_a_second_list():
    import tomllib
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    target = wh.plan_target("3.12", None)
    t = stack.TESTED
    assert target.release is t and target.torch_source == "wheelhouse"
    assert target.stack == [f"torch=={t.torch}", f"vllm=={t.vllm}", f"flashinfer-python=={t.flashinfer}",
                            f"verl=={stack.VERL}", f"transformers=={stack.TRANSFORMERS_RESOLVED}"]
    extras = pyproject["project"]["optional-dependencies"]
    for req in (pyproject["project"]["dependencies"] + extras["eval"] + extras["wandb"] + extras["dev"]
                + pyproject["build-system"]["requires"] + ["pip"]):
        assert req in target.requirements
    assert not any("verl[" in r or "flash-attn" in r or "flash_attn" in r for r in target.requirements)
    assert any(r.startswith("pytest") for r in target.requirements)


@pytest.mark.parametrize("torch, vllm, status", [("2.11.0+cu130", "0.24.0", "accepted"),
                                                 ("2.13.0", "0.28.0", "tested")])
def test_a_torch_on_the_target_chooses_the_release_and_the_manifest_says_which(tmp_path, torch, vllm, status):
    present = tmp_path / "freeze.txt"
    present.write_text(f"# pip freeze of the base image\ntorch=={torch}\nnvidia-cudnn-cu13==9.19.0.56\n"
                       "-e git+https://example/x.git#egg=x\nmylib @ file:///src/mylib\nNumPy==1.26.4\n")
    target = wh.plan_target("3.12", present)
    release = stack.release_for_torch(torch)
    assert target.release.vllm == vllm and target.torch_source == "present"
    assert target.stack == wh.stack_requirements(stack, release)
    assert (f"flashinfer-cubin=={release.flashinfer_cubin}" in target.stack) == bool(release.flashinfer_cubin)
    pip = FakePip()
    manifest = wh.build(tmp_path / "wh", target, pip)
    _, _, _, constraints = pip.calls[0]
    assert f"torch=={torch.split('+')[0]}" in constraints and "nvidia-cudnn-cu13==9.19.0.56" in constraints
    assert "numpy==1.26.4" in constraints  # names compared as pip does; the local label is dropped for pip
    assert (manifest["vllm"], manifest["release_status"], manifest["torch_source"]) == (vllm, status, "present")
    assert manifest["torch"] == release.torch and manifest["stack"] == target.stack
    skipped = {s["name"]: s["version"] for s in manifest["skipped_present"]}
    assert skipped == {"torch": torch, "nvidia-cudnn-cu13": "9.19.0.56"}  # numpy 1.26.4 is not what resolved
    names = {e["name"] for e in manifest["files"]}
    assert "torch" not in names and "nvidia-cudnn-cu13" not in names and {"vllm", "numpy"} <= names
    assert not (tmp_path / "wh" / pip.dist("torch", release.torch).file).exists()


def test_without_a_present_torch_the_tested_release_ships_torch(tmp_path):
    manifest = wh.build(tmp_path / "wh", wh.plan_target("3.12", None), FakePip())
    assert manifest["vllm"] == stack.TESTED.vllm and manifest["release_status"] == "tested"
    assert manifest["torch_source"] == "wheelhouse" and manifest["skipped_present"] == []
    assert any(e["name"] == "torch" and e["version"] == stack.TESTED.torch for e in manifest["files"])


@pytest.mark.parametrize("release", stack.ENGINE_RELEASES, ids=lambda r: r.vllm)
def test_vllm_names_an_engine_only_release_whose_stack_has_no_verl_and_whose_install_has_no_dev_extra(tmp_path, release):
    """--vllm 0.33.0: the V2 engine's own venv (gpu_check's --v2-python): vLLM, its torch and transformers, no verl."""
    import tomllib
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    target = wh.plan_target("3.12", None, vllm=release.vllm)
    assert target.release is release and target.torch_source == "wheelhouse" and target.extras == ("eval",)
    assert target.stack == [f"torch=={release.torch}", f"vllm=={release.vllm}", f"flashinfer-python=={release.flashinfer}",
                            f"transformers=={release.transformers}"]
    assert not any(r.startswith("verl") for r in target.requirements)
    assert all(r in target.requirements for r in extras["eval"]) and any(r.startswith("pytest") for r in target.requirements)
    assert not any(r.startswith(("hypothesis", "wandb", "TransferQueue")) for r in target.requirements)
    manifest = wh.build(tmp_path / "wh", target, FakePip())
    assert (manifest["vllm"], manifest["release_status"], manifest["extras"]) == (release.vllm, release.status, ["eval"])


def test_vllm_may_name_the_gpu_stacks_releases_too():
    for release in stack.RELEASES:
        target = wh.plan_target("3.12", None, vllm=release.vllm)
        assert target.release is release and target.stack == wh.stack_requirements(stack, release)
        assert f"verl=={stack.VERL}" in target.stack and target.extras == wh.EXTRAS


def test_a_vllm_no_table_lists_or_a_present_torch_it_does_not_pin_is_refused_in_one_line(tmp_path):
    one_line_error(shell("--out", str(tmp_path / "wh"), "--vllm", "0.33"), "--vllm 0.33", "0.33.0",
                   "give one of those versions exactly")
    present = tmp_path / "freeze.txt"
    present.write_text("torch==2.13.0\n")
    one_line_error(shell("--out", str(tmp_path / "wh"), "--vllm", "0.33.0", "--present", str(present)),
                   "needs torch 2.14.0", "has torch 2.13.0")
    assert not (tmp_path / "wh").exists()


def test_a_present_torch_the_named_engine_release_pins_is_kept_on_the_target(tmp_path):
    present = tmp_path / "freeze.txt"
    present.write_text("torch==2.14.0+cu130\n")
    target = wh.plan_target("3.12", present, vllm="0.33.0")
    assert target.release.vllm == "0.33.0" and target.torch_source == "present"


def test_the_manifest_lists_every_file_with_its_sha256_and_bytes_and_the_total(tmp_path):
    out = tmp_path / "wh"
    manifest = wh.build(out, wh.plan_target("3.12", None), FakePip())
    on_disk = json.loads((out / "manifest.json").read_text())
    assert on_disk == manifest and manifest["python"] == "3.12" and manifest["platform"] == list(wh.PLATFORMS)
    assert {p.name for p in out.iterdir()} == {e["file"] for e in manifest["files"]} | {"manifest.json", "lock.txt"}
    for e in manifest["files"]:
        data = (out / e["file"]).read_bytes()
        assert e["sha256"] == hashlib.sha256(data).hexdigest() and e["bytes"] == len(data)
        assert e["name"] and e["version"] and "parts" not in e
    assert manifest["file_count"] == len(manifest["files"])
    assert manifest["total_bytes"] == sum(e["bytes"] for e in manifest["files"])


# ---------------------------------------------------------------------- real pip, local wheels

def test_pip_resolves_and_downloads_the_closure_each_file_checked(tmp_path, index):
    out = tmp_path / "wh"
    manifest = wh.build(out, tiny_target(), local_pip(index))
    assert [(e["name"], e["version"]) for e in manifest["files"]] == [("tiny-a", "1.0"), ("tiny-b", "2.0")]
    for e in manifest["files"]:
        assert e["sha256"] == hashlib.sha256((index / e["file"]).read_bytes()).hexdigest()
    assert manifest["present_constraints"] == "none"


def test_what_the_target_has_at_the_resolved_version_is_skipped(tmp_path, index):
    present = tmp_path / "freeze.txt"
    present.write_text("Tiny_B==1.0\nunrelated==3.1\n")
    target = tiny_target(targeting.read_present(present))
    manifest = wh.build(tmp_path / "wh", target, local_pip(index))
    # tiny-b 1.0 is on the target: the resolver keeps it (not 2.0) and nothing is downloaded for it
    assert [e["name"] for e in manifest["files"]] == ["tiny-a"]
    assert manifest["skipped_present"] == [{"name": "tiny-b", "version": "1.0"}]
    assert manifest["present_constraints"] == "all"
    assert sorted(p.name for p in (tmp_path / "wh").iterdir()) == ["lock.txt", "manifest.json",
                                                                    "tiny_a-1.0-py3-none-any.whl"]
    lock = (tmp_path / "wh" / "lock.txt").read_text()
    assert "tiny-a==1.0 --hash=sha256:" in lock and "tiny-b==1.0" in lock and lock.count("# present") == 1


def test_present_pins_that_conflict_are_dropped_and_the_manifest_says_so(tmp_path, index, capsys):
    target = tiny_target({"tiny-b": "3.0"})  # no such release: the pins cannot all hold
    manifest = wh.build(tmp_path / "wh", target, local_pip(index))
    assert [(e["name"], e["version"]) for e in manifest["files"]] == [("tiny-a", "1.0"), ("tiny-b", "2.0")]
    assert manifest["present_constraints"] == "none" and manifest["skipped_present"] == []
    assert "conflict with the stack" in capsys.readouterr().out


def test_a_dependency_with_only_an_sdist_is_built_into_a_wheel_not_resolved_around(tmp_path, index):
    # tiny-e 2.0 needs tiny-c, published as an sdist only; tiny-e 1.0 needs nothing. A wheels-only
    # resolve would quietly pick tiny-e 1.0 (as pip picks hydra-core 0.11 over 1.3 for antlr4's sake).
    pytest.importorskip("setuptools", reason="the sdist is built here without build isolation")
    folder = tmp_path / "index"
    write_wheel(folder, "tiny-e", "1.0")
    write_wheel(folder, "tiny-e", "2.0", ("tiny-c",))
    write_sdist(folder, "tiny-c", "1.0")
    target = wh.Target(HOST_PYTHON, {}, stack.TESTED, "wheelhouse", ["tiny-e"], ["tiny-e"], ["pip"])
    manifest = wh.build(tmp_path / "wh", target, local_pip(folder))
    assert [(e["name"], e["version"]) for e in manifest["files"]] == [("tiny-c", "1.0"), ("tiny-e", "2.0")]
    assert manifest["built_from_sdist"] == ["tiny-c==1.0"] and manifest["differs_from_host_resolve"] == {}
    assert next(e for e in manifest["files"] if e["name"] == "tiny-c")["file"].endswith("-py3-none-any.whl")


def test_an_earlier_build_in_the_folder_is_reused_and_its_stale_wheels_removed(tmp_path, index):
    out = tmp_path / "wh"
    wh.build(out, tiny_target(), local_pip(index))
    (out / "tiny_b-1.0-py3-none-any.whl").write_bytes((index / "tiny_b-1.0-py3-none-any.whl").read_bytes())
    manifest = wh.build(out, tiny_target(), local_pip(index))
    assert sorted(p.name for p in out.iterdir()) == sorted([e["file"] for e in manifest["files"]]
                                                           + ["lock.txt", "manifest.json"])


def test_a_cpu_torch_chosen_by_a_configured_index_is_refused():
    cpu = wh.Dist("torch", "2.13.0+cpu", "torch-2.13.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl",
                  "file:///wheels/torch-2.13.0+cpu-cp312-cp312-manylinux_2_28_x86_64.whl", None)
    with pytest.raises(wh.WheelhouseError, match=r"torch 2\.13\.0\+cpu .* a cpu build.*pip config list"):
        building.check_torch_build([cpu], stack.TESTED)
    building.check_torch_build([cpu.__class__("torch", "2.13.0", cpu.file, cpu.url, None)], stack.TESTED)


# ----------------------------------------------------------------------------- parts, join

def split_wheelhouse(tmp_path: Path) -> tuple[Path, dict, dict[str, bytes]]:
    """A FakePip wheelhouse whose torch (2.5 MiB) is cut into 1 MiB parts; the files' bytes as built."""
    pip = FakePip({FakePip().dist("torch", stack.TESTED.torch).file: 5 * wh.MIB // 2})
    out = tmp_path / "wh"
    manifest = wh.build(out, wh.plan_target("3.12", None), pip, part_bytes=wh.MIB)
    return out, manifest, {e["file"]: pip.content(e["file"]) for e in manifest["files"]}


def test_part_mib_cuts_large_files_and_join_puts_them_back_byte_for_byte(tmp_path):
    out, manifest, original = split_wheelhouse(tmp_path)
    torch = next(e for e in manifest["files"] if e["name"] == "torch")
    assert [p["file"] for p in torch["parts"]] == [f"{torch['file']}.part{i:03d}" for i in range(3)]
    assert [p["bytes"] for p in torch["parts"]] == [wh.MIB, wh.MIB, wh.MIB // 2]
    assert not (out / torch["file"]).exists() and all("parts" not in e for e in manifest["files"] if e is not torch)
    res = shell("--join", str(out))
    assert res.returncode == 0 and "joined and checked" in res.stdout, res.stderr
    for file, data in original.items():
        assert (out / file).read_bytes() == data
    assert not list(out.glob("*.part*")) and not list(out.glob("*.joining"))
    assert shell("--join", str(out)).returncode == 0  # a joined wheelhouse joins again as a no-op check


def test_a_missing_part_is_named_in_one_line_and_nothing_is_joined(tmp_path):
    out, manifest, _ = split_wheelhouse(tmp_path)
    torch = next(e for e in manifest["files"] if e["name"] == "torch")
    (out / torch["parts"][1]["file"]).unlink()
    one_line_error(shell("--join", str(out)), torch["parts"][1]["file"], "is missing", "part 2 of 3",
                   "copy it again")
    assert not (out / torch["file"]).exists() and not list(out.glob("*.joining"))
    assert (out / torch["parts"][0]["file"]).exists() and (out / torch["parts"][2]["file"]).exists()


def test_a_part_whose_sha256_differs_is_named_and_no_file_is_left_half_joined(tmp_path):
    out, manifest, _ = split_wheelhouse(tmp_path)
    torch = next(e for e in manifest["files"] if e["name"] == "torch")
    part = out / torch["parts"][2]["file"]
    data = bytearray(part.read_bytes())
    data[7] ^= 0xFF
    part.write_bytes(bytes(data))
    one_line_error(shell("--join", str(out)), part.name, "differs from the manifest's sha256", "copy it again")
    assert not (out / torch["file"]).exists() and not list(out.glob("*.joining"))
    assert all((out / p["file"]).exists() for p in torch["parts"])  # the parts stay for another try


def test_a_whole_file_whose_sha256_differs_fails_the_join(tmp_path):
    out, manifest, _ = split_wheelhouse(tmp_path)
    vllm = next(e for e in manifest["files"] if e["name"] == "vllm")
    data = bytearray((out / vllm["file"]).read_bytes())
    data[0] ^= 1
    (out / vllm["file"]).write_bytes(bytes(data))
    one_line_error(shell("--join", str(out)), vllm["file"], "differs from the manifest's sha256")


@pytest.mark.parametrize("text, words", [("{not json", "not a wheelhouse manifest"),
                                         ('{"format": 1, "files": []}', "no 'vllm'"),
                                         ('{"format": 99}', "format 99")])
def test_a_bad_manifest_fails_in_one_line(tmp_path, text, words):
    (tmp_path / "manifest.json").write_text(text)
    one_line_error(shell("--join", str(tmp_path)), words, "rebuild it")


def test_a_folder_without_a_manifest_or_without_the_folder_fails_in_one_line(tmp_path):
    one_line_error(shell("--join", str(tmp_path / "nowhere")), "no wheelhouse at")
    one_line_error(shell("--join", str(tmp_path)), "has no manifest.json")


# ----------------------------------------------------------------------- install, no index

def test_a_wheelhouse_for_this_python_installs_with_no_index_after_split_and_join(tmp_path, index):
    out = tmp_path / "wh"
    manifest = wh.build(out, tiny_target(), local_pip(index), part_bytes=300)
    assert all(e.get("parts") for e in manifest["files"])  # every tiny wheel is over 300 bytes
    assert shell("--join", str(out)).returncode == 0
    site = tmp_path / "site"
    res = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--find-links", str(out),
                          "--target", str(site), "--quiet", "tiny-a"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    got = subprocess.run([sys.executable, "-c", "import tiny_a, tiny_b; print(tiny_a.VERSION, tiny_b.VERSION)"],
                         capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(site)})
    assert got.stdout.split() == ["1.0", "2.0"], got.stderr


# ------------------------------------------------------------------------------ bad input

@pytest.mark.parametrize("torch", ["2.12.0+cu130", "2.10.0"])
def test_a_present_torch_no_release_supports_is_refused_before_any_work(tmp_path, torch):
    present = tmp_path / "freeze.txt"
    present.write_text(f"torch=={torch}\n")
    res = shell("--out", str(tmp_path / "wh"), "--present", str(present))
    one_line_error(res, f"torch {torch}", stack.describe(), "stack.py")
    assert not (tmp_path / "wh").exists()


def test_a_present_cpu_torch_or_one_without_a_version_is_refused(tmp_path):
    present = tmp_path / "freeze.txt"
    present.write_text("torch==2.13.0+cpu\n")
    one_line_error(shell("--out", str(tmp_path / "wh"), "--present", str(present)), "a cpu build", "cu130")
    present.write_text("torch @ file:///opt/torch-2.13.0-cp312-cp312-linux_x86_64.whl\n")
    one_line_error(shell("--out", str(tmp_path / "wh"), "--present", str(present)), "has no version", "torch==VERSION")
    assert not (tmp_path / "wh").exists()


@pytest.mark.parametrize("args, words", [
    ([], "--out --join is required"),
    (["--out", "A", "--join", "B"], "not allowed with"),
    (["--out", "A", "--part-mib", "0"], "at least 1 MiB"),
    (["--out", "A", "--python", "3.13"], "requires Python >=3.10,<3.13"),
    (["--out", "A", "--python", "312"], "X.Y"),
    (["--out", "A", "--present", "no-such-freeze.txt"], "no such file"),
    (["--join", "A", "--part-mib", "5"], "--join takes only"),
    (["--join", "A", "--vllm", "0.33.0"], "--join takes only"),
    (["--out", "A", "--bogus"], "--bogus"),
])
def test_bad_arguments_fail_in_one_line(tmp_path, args, words):
    one_line_error(subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, cwd=tmp_path,
                                  env={**os.environ, "GPU_WHEELHOUSE_LAUNCHER_PYTHON": sys.executable}), words)
    assert not (tmp_path / "A").exists()


def test_the_resolver_runs_on_a_cpython_of_the_target_version_on_linux_x86_64(monkeypatch):
    # pip reads markers such as python_version > "3.11" (vLLM's setuptools<81) from the interpreter that
    # runs it, whatever --python-version says: a resolve for 3.12 run by 3.11 picks the wrong releases.
    assert pip_route.resolver_python(HOST_PYTHON) == sys.executable
    other = "3.10" if HOST_PYTHON != "3.10" else "3.12"
    monkeypatch.setattr(pip_route.shutil, "which", lambda name: None)
    with pytest.raises(wh.WheelhouseError, match=rf"--python {other}: .*python{other} on PATH is missing.*"
                                                 rf"--resolver uv.*GPU_WHEELHOUSE_LAUNCHER_PYTHON=/path/to/python{other}"):
        pip_route.resolver_python(other)
    monkeypatch.setattr(pip_route.platform, "system", lambda: "Darwin")
    with pytest.raises(wh.WheelhouseError, match="build the wheelhouse on Linux x86_64.*--resolver uv"):
        pip_route.resolver_python(HOST_PYTHON)


def test_an_out_folder_holding_other_files_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    one_line_error(shell("--out", str(tmp_path)), "holds other files (notes.txt)", "new or empty folder")
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_help_explains_each_flag():
    res = shell("--help")
    assert res.returncode == 0
    for flag in ("--out DIR", "--join DIR", "--python X.Y", "--present FILE", "--part-mib N", "--platform TAG",
                 "--resolver {auto,uv,pip}", "--resolve-only"):
        assert flag in res.stdout
    assert "manifest.json" in res.stdout and "release_for_torch" in res.stdout


# --------------------------------------------------------------- the target's tags, no interpreter

def test_the_wheel_a_target_installs_is_its_own_abi_then_the_stable_abi_then_pure_python():
    def pick(*names, python="3.12", platform="x86_64-manylinux_2_34"):
        best = tags.best_wheel([{"url": f"https://files.example/{n}"} for n in names], python,
                               targeting.platform_tags(platform))
        return best and best["url"].rsplit("/", 1)[1]

    own, abi3, pure = ("x-1-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
                       "x-1-cp39-abi3-manylinux_2_28_x86_64.whl", "x-1-py3-none-any.whl")
    assert pick(pure, abi3, own) == own and pick(pure, abi3) == abi3 and pick(pure) == pure
    assert pick("x-1-cp312-cp312-manylinux_2_28_x86_64.whl", "x-1-cp312-cp312-manylinux_2_17_x86_64.whl") \
        == "x-1-cp312-cp312-manylinux_2_28_x86_64.whl"  # the newest glibc the target has wins
    assert pick("x-1-cp312-cp312-manylinux_2_35_x86_64.whl") is None  # needs a newer glibc than 2.34
    assert pick("x-1-cp311-cp311-manylinux_2_17_x86_64.whl", "x-1-cp312-cp312-musllinux_1_2_x86_64.whl",
                "x-1-cp312-cp312-manylinux_2_17_aarch64.whl", "x-1-cp312-cp312-win_amd64.whl") is None
    assert pick("x-1-cp311-cp311-manylinux_2_17_x86_64.whl", python="3.11") is not None


def test_resolve_only_writes_the_lock_and_the_files_it_would_fetch_and_downloads_nothing(tmp_path, index):
    out = tmp_path / "wh"
    plan = building.resolve_only(out, tiny_target({"tiny-b": "1.0"}), local_pip(index))
    assert sorted(p.name for p in out.iterdir()) == ["lock.txt", "plan.json"]
    assert json.loads((out / "plan.json").read_text()) == plan and plan["resolve_only"] is True
    assert [(f["name"], f["version"], f["file"]) for f in plan["files"]] == [
        ("tiny-a", "1.0", "tiny_a-1.0-py3-none-any.whl")]
    assert plan["files"][0]["sha256"] == hashlib.sha256((index / "tiny_a-1.0-py3-none-any.whl").read_bytes()).hexdigest()
    assert plan["skipped_present"] == [{"name": "tiny-b", "version": "1.0"}]
    assert plan["resolver"]["name"] == "pip" and plan["resolver"]["version"]
    assert plan["total_bytes"] is None  # pip's report has no sizes; uv's lock has them
    lock = (out / "lock.txt").read_text().splitlines()
    assert [line.split()[0] for line in lock if not line.startswith("#")] == ["tiny-a==1.0", "tiny-b==1.0"]
    assert lock[-1].endswith("# present")
    manifest = wh.build(out, tiny_target({"tiny-b": "1.0"}), local_pip(index))  # a build may follow in the folder
    assert [e["name"] for e in manifest["files"]] == ["tiny-a"] and not (out / "plan.json").exists()


# ---------------------------------------------------------------------- which resolver

def no_uv(monkeypatch, tmp_path) -> dict:
    """An environment where the pinned uv cannot be had: no cached copy, no index for pip."""
    empty = tmp_path / "no-index"
    empty.mkdir(exist_ok=True)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(empty),
           "GPU_WHEELHOUSE_UV": ""}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env


def test_a_uv_that_cannot_be_installed_is_named_in_one_line_before_any_download(tmp_path, monkeypatch):
    env = no_uv(monkeypatch, tmp_path)
    res = shell("--out", str(tmp_path / "wh"), "--resolver", "uv", **env)
    one_line_error(res, f"uv {cli.UV_VERSION} cannot be installed here", "GPU_WHEELHOUSE_UV=/path/to/uv",
                   "--resolver pip")
    assert not (tmp_path / "wh").exists()
    one_line_error(shell("--out", str(tmp_path / "wh"), "--resolver", "uv", **{**env, "GPU_WHEELHOUSE_UV": "/bin/true"}),
                   "GPU_WHEELHOUSE_UV=/bin/true is not uv", f"pip install uv=={cli.UV_VERSION}")


def test_auto_takes_uv_where_it_can_be_had_else_pip_run_by_a_python_of_the_target_version(tmp_path, monkeypatch):
    monkeypatch.setattr(cli, "uv_binary", lambda: "/opt/uv")
    target = wh.plan_target(HOST_PYTHON, None)
    assert isinstance(cli.make_resolver("auto", target), cli.Uv)
    assert isinstance(cli.make_resolver("pip", target), pip_route.Pip)

    def unavailable():
        raise cli.UvUnavailable("uv cannot be installed here")

    monkeypatch.setattr(cli, "uv_binary", unavailable)
    resolver = cli.make_resolver("auto", target)
    assert isinstance(resolver, pip_route.Pip) and resolver.executable == sys.executable
    with pytest.raises(cli.UvUnavailable):
        cli.make_resolver("uv", target)
    monkeypatch.setattr(pip_route.shutil, "which", lambda name: None)
    other = "3.10" if HOST_PYTHON != "3.10" else "3.12"
    with pytest.raises(cli.UvUnavailable):  # neither route: uv's line, which names both fixes
        cli.make_resolver("auto", wh.plan_target(other, None))


@pytest.mark.parametrize("platform", ["aarch64-manylinux_2_34", "x86_64-unknown-linux-musl", "macosx_14_0_arm64",
                                      "win_amd64", "x86_64-manylinux_2_12", "manylinux_2_34"])
def test_a_platform_that_is_not_manylinux_x86_64_is_refused_in_one_line(tmp_path, platform):
    one_line_error(shell("--out", str(tmp_path / "wh"), "--platform", platform), f"--platform {platform}",
                   "x86_64-manylinux_2_N", "ldd --version")
    assert not (tmp_path / "wh").exists()


def test_both_spellings_of_a_manylinux_platform_name_the_same_target():
    for spelling in ("x86_64-manylinux_2_28", "manylinux_2_28_x86_64"):
        target = wh.plan_target("3.12", None, platform=spelling)
        assert target.platform == "x86_64-manylinux_2_28"
        assert target.platforms[0] == "manylinux_2_28_x86_64" and "manylinux_2_34_x86_64" not in target.platforms


def test_a_present_vllm_that_its_torch_does_not_pair_with_is_refused(tmp_path):
    present = tmp_path / "freeze.txt"
    present.write_text("torch==2.11.0+cu130\nvllm==0.28.0\n")
    one_line_error(shell("--out", str(tmp_path / "wh"), "--present", str(present)), "vllm 0.28.0",
                   "torch 2.11.0", "drop vllm from the file")
    present.write_text("vllm==0.20.1\n")
    one_line_error(shell("--out", str(tmp_path / "wh"), "--present", str(present)), "vllm 0.20.1")
    present.write_text("torch==2.11.0+cu130\nvllm==0.24.0\n")
    assert wh.plan_target("3.12", present).release.vllm == "0.24.0"
    assert not (tmp_path / "wh").exists()


def test_resolve_only_and_join_refuse_flags_they_cannot_use(tmp_path):
    one_line_error(shell("--out", str(tmp_path / "wh"), "--resolve-only", "--part-mib", "5"), "drop --part-mib")
    one_line_error(shell("--join", str(tmp_path / "wh"), "--resolver", "uv"), "--join takes only")
    one_line_error(shell("--out", str(tmp_path / "wh"), "--resolver", "conda"), "invalid choice")
