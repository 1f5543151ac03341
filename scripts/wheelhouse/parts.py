"""A wheelhouse's files cut into parts (--part-mib) and put back (--join), and its manifest read back.

Parts are for media or transfers with a size limit. The join checks every part and every whole
file against the manifest's sha256 and removes the parts; a join that stops half-way leaves no
half-joined file, and a joined wheelhouse joins again as a no-op check. scripts/gpu_checks/ reads a
manifest through load_manifest and check_complete.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from .basics import CHUNK, FORMAT, MANIFEST, WheelhouseError, sha256_of


def split(path: Path, part_bytes: int) -> list[dict]:
    """Cut `path` into PATH.part000, .part001, ... of `part_bytes` each (the last shorter); remove it."""
    parts = []
    with open(path, "rb") as src:
        while True:
            part = path.with_name(f"{path.name}.part{len(parts):03d}")
            digest, size = hashlib.sha256(), 0
            with open(part, "wb") as dst:
                while size < part_bytes and (block := src.read(min(CHUNK, part_bytes - size))):
                    dst.write(block)
                    digest.update(block)
                    size += len(block)
            if size == 0:
                part.unlink()
                break
            parts.append({"file": part.name, "sha256": digest.hexdigest(), "bytes": size})
    path.unlink()
    return parts


def load_manifest(folder: Path) -> dict:
    """DIR/manifest.json, checked for the fields a join and an install read."""
    if not folder.is_dir():
        raise WheelhouseError(f"no wheelhouse at {folder}: build one with bash scripts/gpu_wheelhouse.sh --out {folder}")
    path = folder / MANIFEST
    if not path.is_file():
        raise WheelhouseError(f"{folder} has no {MANIFEST}: not a wheelhouse of scripts/gpu_wheelhouse.sh; "
                              f"build one with bash scripts/gpu_wheelhouse.sh --out DIR")
    try:
        manifest = json.loads(path.read_text())
        problem = manifest_problem(manifest)
    except ValueError as e:
        problem = str(e)
    if problem:
        raise WheelhouseError(f"{path} is not a wheelhouse manifest ({problem}): rebuild it with "
                              "bash scripts/gpu_wheelhouse.sh --out DIR")
    return manifest


def manifest_problem(manifest) -> str | None:
    """What makes `manifest` unreadable for a join or an install, or None."""
    if not isinstance(manifest, dict):
        return "not a JSON object"
    if manifest.get("format") != FORMAT:
        return f"format {manifest.get('format')!r}, this script reads {FORMAT}"
    for key in ("vllm", "python", "stack", "build_requires", "extras", "torch_source", "skipped_present", "files"):
        if key not in manifest:
            return f"no {key!r}"
    for entry in manifest["files"]:
        if not isinstance(entry, dict) or any(k not in entry for k in ("name", "version", "file", "sha256", "bytes")):
            return f"a file entry without name, version, file, sha256 or bytes: {entry!r}"[:200]
        names = [entry["file"]] + [p.get("file", "") for p in entry.get("parts") or []]
        if any(not n or "/" in n or n.startswith(".") for n in names):
            return f"a file name that is not a plain name in the folder: {entry['file']!r}"
    return None


def check_complete(folder: Path, manifest: dict) -> None:
    """Every file, or every part of it, is there at its size (cheap: no hashing)."""
    for entry in manifest["files"]:
        whole = folder / entry["file"]
        if whole.is_file() and whole.stat().st_size == entry["bytes"]:
            continue
        parts = entry.get("parts") or []
        if not parts:
            raise WheelhouseError(_missing_or_short(whole, entry["bytes"], entry["file"]))
        for i, part in enumerate(parts):
            path = folder / part["file"]
            if not (path.is_file() and path.stat().st_size == part["bytes"]):
                raise WheelhouseError(_missing_or_short(path, part["bytes"], f"part {i + 1} of {len(parts)} of "
                                                                             f"{entry['file']}"))


def _missing_or_short(path: Path, want: int, what: str) -> str:
    fix = "copy it again from the machine that built the wheelhouse"
    if not path.is_file():
        return f"{path} is missing ({what}): {fix}"
    return f"{path} has {path.stat().st_size} bytes, the manifest says {want} ({what}): {fix}"


def join_one(folder: Path, entry: dict) -> None:
    """Concatenate the parts into FILE, checking each part's and the whole file's sha256; remove the parts."""
    whole, tmp = folder / entry["file"], folder / (entry["file"] + ".joining")
    digest = hashlib.sha256()
    try:
        with open(tmp, "wb") as dst:
            for i, part in enumerate(entry["parts"]):
                part_digest = hashlib.sha256()
                with open(folder / part["file"], "rb") as src:
                    while block := src.read(CHUNK):
                        dst.write(block)
                        part_digest.update(block)
                        digest.update(block)
                if part_digest.hexdigest() != part["sha256"]:
                    raise WheelhouseError(f"{folder / part['file']} (part {i + 1} of {len(entry['parts'])} of "
                                          f"{entry['file']}) differs from the manifest's sha256: copy it again from "
                                          "the machine that built the wheelhouse")
        if digest.hexdigest() != entry["sha256"]:
            raise WheelhouseError(f"{whole} joined from its parts differs from the manifest's sha256: rebuild the "
                                  "wheelhouse with bash scripts/gpu_wheelhouse.sh --out DIR")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    tmp.replace(whole)
    for part in entry["parts"]:
        (folder / part["file"]).unlink(missing_ok=True)


def whole_matches(folder: Path, entry: dict) -> bool:
    path = folder / entry["file"]
    return path.is_file() and path.stat().st_size == entry["bytes"] and sha256_of(path) == entry["sha256"]


def verify_one(folder: Path, entry: dict) -> None:
    path = folder / entry["file"]
    if sha256_of(path) != entry["sha256"]:
        raise WheelhouseError(f"{path} differs from the manifest's sha256: copy it again from the machine that "
                              "built the wheelhouse, or rebuild it with bash scripts/gpu_wheelhouse.sh --out DIR")
    for part in entry.get("parts") or []:  # left over from a join that stopped after the rename
        (folder / part["file"]).unlink(missing_ok=True)


def join(folder: Path) -> dict:
    """Put split files back and check every file against the manifest; returns the manifest."""
    manifest = load_manifest(folder)
    check_complete(folder, manifest)
    for entry in manifest["files"]:
        parts = entry.get("parts") or []
        if parts and all((folder / p["file"]).is_file() for p in parts) and not whole_matches(folder, entry):
            join_one(folder, entry)
        else:
            verify_one(folder, entry)
    for leftover in folder.glob("*.joining"):
        leftover.unlink()
    return manifest
