"""The paper evaluation resolves every checkpoint before any work (a node without internet learns at once).

A local directory needs its config.json; a hub id must be in the local Hugging Face cache
when the hub is offline. A default can be left out with `--skip-default`. Everything here
runs with `HF_HUB_OFFLINE=1` and a cache made in a temporary folder: no network.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tandem.errors import TandemError
from tandem_eval.paper.checkpoints import BASE_MODEL, RELEASED_TRL, check_available, resolve_checkpoints

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "reproduce_paper_eval.sh"


def fake_cache(root: Path, repo_id: str) -> Path:
    """The hub cache layout `huggingface_hub` reads: refs/main -> snapshots/<commit>/config.json."""
    repo = root / f"models--{repo_id.replace('/', '--')}"
    snapshot = repo / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text("{}")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("a" * 40)
    return snapshot


@pytest.fixture
def offline(tmp_path, monkeypatch):
    from huggingface_hub import constants

    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(cache))
    return cache


def local_model(tmp_path: Path, name: str) -> str:
    path = tmp_path / name
    path.mkdir()
    (path / "config.json").write_text("{}")
    return str(path)


def test_a_hub_checkpoint_missing_from_the_cache_is_refused_naming_it_and_the_fixes(tmp_path, offline):
    checkpoints = resolve_checkpoints([f"base={local_model(tmp_path, 'base')}"])
    assert checkpoints[1] == ("trl-released", RELEASED_TRL)
    with pytest.raises(TandemError) as e:
        check_available(checkpoints, checkpoints[0][1])
    line = str(e.value)
    assert "\n" not in line and f"trl-released: {RELEASED_TRL} is not in the local Hugging Face cache" in line
    assert "huggingface-cli download" in line and "--checkpoint LABEL=DIR" in line and "--skip-default" in line


def test_every_unavailable_checkpoint_is_named_in_the_one_line(tmp_path, offline):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(TandemError) as e:
        check_available(resolve_checkpoints([f"mine={empty}"]), BASE_MODEL)
    line = str(e.value)
    assert f"base: {BASE_MODEL}" in line and f"trl-released: {RELEASED_TRL}" in line
    assert f"mine: {empty} has no config.json" in line and line.count(f"{BASE_MODEL} is not") == 1


def test_a_hub_checkpoint_in_the_cache_resolves_offline(tmp_path, offline):
    fake_cache(offline, RELEASED_TRL)
    fake_cache(offline, BASE_MODEL)
    check_available(resolve_checkpoints([]), BASE_MODEL)


def test_skip_default_leaves_the_released_checkpoint_out(tmp_path, offline):
    base = local_model(tmp_path, "base")
    checkpoints = resolve_checkpoints([f"base={base}", f"mine={base}"], ["trl-released"])
    assert [label for label, _ in checkpoints] == ["base", "mine"]
    check_available(checkpoints, base)
    given = resolve_checkpoints([f"trl-released={base}"], ["trl-released"])  # an explicit path wins over the skip
    assert ("trl-released", str(Path(base).resolve())) in given


@pytest.mark.parametrize(("label", "match"), [("base", "base is the junior"), ("grpo", "the defaults are")])
def test_skip_default_refuses_the_base_and_unknown_labels(label, match):
    with pytest.raises(TandemError, match=match):
        resolve_checkpoints([], [label])


def test_the_command_stops_before_any_work_when_the_released_checkpoint_is_not_cached(tmp_path):
    base, out = local_model(tmp_path, "base"), tmp_path / "out"
    env = {**os.environ, "PYTHON": sys.executable, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub")}
    res = subprocess.run(["bash", str(SCRIPT), "--out", str(out), "--checkpoint", f"base={base}", "--backend",
                          "engine"], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode != 0
    errors = [line for line in res.stderr.strip().splitlines() if line.strip()]
    assert len(errors) == 1 and f"trl-released: {RELEASED_TRL} is not in the local" in errors[0]
    assert not out.exists()  # no evaluation started, nothing written
