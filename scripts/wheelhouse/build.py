"""Resolve for the target, then either fetch the files and write the manifest (a build), or
write the lock and the list of files a build would fetch (--resolve-only).

A resolver is anything with `resolve(python, requirements, constraints) -> [Dist]` and
`download(python, dists, dest)`: uv.Uv, pip_route.Pip, or a test's stand-in.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path

from .basics import FORMAT, LOCK, MANIFEST, PLAN, Dist, ResolveError, WheelhouseError, base_version, normalize
from .download import file_entry
from .parts import split
from .target import Target

KEPT = (MANIFEST, LOCK, PLAN)  # besides wheels, what an earlier build or resolve leaves in --out


@dataclass
class Resolution:
    """The closure for a target, split into what it lacks and what it has."""

    dists: list[Dist]
    constrained: str  # which --present pins the resolver honoured: "all", "some", "torch" or "none"
    dropped: list[str]  # the --present pins left out because they conflict with the stack
    wanted: list[Dist]
    skipped: list[Dist]
    differs: dict[str, dict]
    seconds: float


def check_out_dir(out: Path) -> list[Path]:
    """A new or empty folder, or an earlier (unsplit) build or resolve: its wheels, to reuse."""
    if out.exists() and not out.is_dir():
        raise WheelhouseError(f"--out {out} is a file: name a new or empty folder")
    if not out.exists():
        return []
    other = [p.name for p in out.iterdir() if not (p.name.endswith(".whl") or p.name in KEPT)]
    if other:
        raise WheelhouseError(f"--out {out} holds other files ({', '.join(sorted(other)[:3])}): name a new or "
                              "empty folder (an earlier unsplit wheelhouse there is reused)")
    return sorted(out.glob("*.whl"))


def named_in(error: str, names: list[str]) -> list[str]:
    """The distribution names an error message mentions (uv names each requirement of a conflict)."""
    text = normalize(error)
    return [n for n in names if re.search(rf"(?<![a-z0-9-]){re.escape(n)}(?![a-z0-9-])", text)]


def resolve_closure(resolver, target: Target) -> tuple[list[Dist], str, list[str]]:
    """The closure with the --present pins as constraints: those a conflict names are dropped one round at a
    time; when a conflict names none, only torch's pin is kept. Returns how many held and which were dropped."""
    pins = {name: f"{name}=={base_version(v)}" for name, v in sorted(target.present.items())}
    where = f"cp{target.python.replace('.', '')} {target.platform}"
    dropped: list[str] = []
    while True:
        kept = [pin for name, pin in pins.items() if name not in dropped]
        try:
            dists = resolver.resolve(target.python, target.requirements, kept)
        except ResolveError as e:
            others = [n for n in pins if n not in dropped and n != "torch"]
            if not others:
                raise WheelhouseError(f"no set of wheels for the stack on {where}: {e}") from None
            named = named_in(str(e), others) or others
            dropped += named
            print(f"gpu_wheelhouse: the --present pins of {', '.join(named)} conflict with the stack "
                  f"({str(e)[:200]}); resolving without them (the target's copies are replaced)", flush=True)
            continue
        held = "none" if not kept else "all" if not dropped else "torch" if kept == [pins.get("torch")] else "some"
        return dists, held, dropped


def check_torch_build(dists: list[Dist], release) -> None:
    """A torch with a local label other than the release's CUDA one (e.g. +cpu from a configured index) is refused."""
    for d in dists:
        local = d.version.partition("+")[2]
        if normalize(d.name) == "torch" and local and local != release.torch_cuda:
            raise WheelhouseError(f"the resolver chose torch {d.version} ({d.url}), a {local} build: an index or "
                                  "find-links in pip's or uv's configuration serves it (pip config list); "
                                  "remove it there")


def differs_from_host(dists: list[Dist], host_versions: dict[str, str]) -> dict[str, dict]:
    """The releases the target pass chose that differ from the first (this machine's, sdists allowed) pass."""
    return {d.name: {"target": d.version, "host": host_versions[normalize(d.name)]} for d in dists
            if normalize(d.name) in host_versions and host_versions[normalize(d.name)] != d.version}


def satisfied(dist: Dist, present: dict[str, str]) -> bool:
    have = present.get(normalize(dist.name))
    return have is not None and base_version(have) == base_version(dist.version)


def resolve(resolver, target: Target) -> Resolution:
    """The closure for `target`, checked, and what of it the target lacks."""
    name = getattr(resolver, "name", "the resolver")
    print(f"gpu_wheelhouse: resolving {len(target.requirements)} requirements with {name} for CPython "
          f"{target.python} on {target.platform}, vLLM {target.release.vllm} ...", flush=True)
    start = time.monotonic()
    dists, constrained, dropped = resolve_closure(resolver, target)
    seconds = round(time.monotonic() - start, 1)
    check_torch_build(dists, target.release)
    differs = differs_from_host(dists, getattr(resolver, "host_versions", {}))
    if differs:
        print("gpu_wheelhouse: note: with wheels only, for the target, pip chose other releases than for this "
              "machine with sdists allowed: " + ", ".join(f"{n} {v['target']} (here {v['host']})"
                                                          for n, v in differs.items()), flush=True)
    wanted = [d for d in dists if not satisfied(d, target.present)]
    skipped = [d for d in dists if satisfied(d, target.present)]
    return Resolution(dists, constrained, dropped, wanted, skipped, differs, seconds)


def lock_text(res: Resolution, target: Target, resolver_id: dict) -> str:
    """The closure as pip requirement lines, each with the sha256 of the file chosen for the target."""
    head = (f"# the GPU stack for vLLM {target.release.vllm} ({target.release.status}), CPython {target.python} on "
            f"{target.platform}, resolved by {resolver_id['name']} {resolver_id['version']}\n"
            "# lines marked `present` are already on the target (--present) and are not fetched\n")
    present = {normalize(d.name) for d in res.skipped}
    lines = [f"{d.name}=={d.version}" + (f" --hash=sha256:{d.sha256}" if d.sha256 else "")
             + ("  # present" if normalize(d.name) in present else "")
             for d in sorted(res.dists, key=lambda d: normalize(d.name))]
    return head + "\n".join(lines) + "\n"


def common_fields(res: Resolution, target: Target, resolver) -> dict:
    """What the manifest and the plan share: the release, the target, the resolver and its answer."""
    identity = resolver.identity() if hasattr(resolver, "identity") else {"name": type(resolver).__name__,
                                                                          "version": None}
    return {
        "format": FORMAT,
        "created_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "resolver": identity, "resolve_seconds": res.seconds,
        "vllm": target.release.vllm, "release_status": target.release.status, "torch": target.release.torch,
        "torch_cuda": target.release.torch_cuda, "torch_source": target.torch_source,
        "python": target.python, "python_platform": target.platform, "platform": list(target.platforms),
        "stack": target.stack, "build_requires": target.build_requires, "extras": list(target.extras),
        "requirements": target.requirements, "present_constraints": res.constrained,
        "present_dropped": res.dropped,
        "skipped_present": [{"name": d.name, "version": target.present[normalize(d.name)]} for d in res.skipped],
        "differs_from_host_resolve": res.differs,
    }


def write_json(out: Path, name: str, data: dict) -> Path:
    path, tmp = out / name, out / (name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)
    return path


def resolve_only(out: Path, target: Target, resolver) -> dict:
    """Write OUT/lock.txt and OUT/plan.json (the files a build would fetch, with the index's sizes); no download."""
    check_out_dir(out)
    res = resolve(resolver, target)
    fields = common_fields(res, target, resolver)
    sizes = [d.bytes for d in res.wanted]
    built = getattr(resolver, "built_from_sdist", [])
    here = {d.file for d in built}  # built into a temporary folder that goes with the resolver: no URL to keep
    files = [{"name": d.name, "version": d.version, "file": d.file, "url": None if d.file in here else d.url,
              "sha256": d.sha256, "bytes": d.bytes} for d in sorted(res.wanted, key=lambda d: normalize(d.name))]
    plan = {**fields, "resolve_only": True, "files": files,
            "file_count": len(res.wanted), "total_bytes": None if None in sizes else sum(sizes),
            "built_from_sdist": sorted(f"{d.name}=={d.version}" for d in built)}
    out.mkdir(parents=True, exist_ok=True)
    (out / LOCK).write_text(lock_text(res, target, fields["resolver"]))
    write_json(out, PLAN, plan)
    return plan


def build(out: Path, target: Target, resolver, part_bytes: int | None = None) -> dict:
    """Resolve, download what the target lacks, split, and write the manifest and the lock; returns the manifest."""
    earlier = check_out_dir(out)
    res = resolve(resolver, target)
    out.mkdir(parents=True, exist_ok=True)
    stale = [p for p in earlier if p.name not in {d.file for d in res.wanted}]
    for path in stale:
        path.unlink()
    (out / PLAN).unlink(missing_ok=True)
    print(f"gpu_wheelhouse: downloading {len(res.wanted)} wheels ({len(res.skipped)} already on the target) into "
          f"{out}" + (f"; removed {len(stale)} wheels of an earlier build" if stale else ""), flush=True)
    if res.wanted:
        resolver.download(target.python, res.wanted, out)
    files = sorted((file_entry(out, d) for d in res.wanted), key=lambda e: normalize(e["name"]))
    for entry in files:
        if part_bytes and entry["bytes"] > part_bytes:
            entry["parts"] = split(out / entry["file"], part_bytes)
    fields = common_fields(res, target, resolver)
    manifest = {**fields, "part_bytes": part_bytes,
                "files": files, "file_count": len(files), "total_bytes": sum(e["bytes"] for e in files),
                "built_from_sdist": sorted(f"{d.name}=={d.version}" for d in getattr(resolver, "built_from_sdist", [])
                                           if d.file in {e["file"] for e in files})}
    (out / LOCK).write_text(lock_text(res, target, fields["resolver"]))
    write_json(out, MANIFEST, manifest)
    return manifest
