"""Which of a release's wheels CPython X.Y on manylinux x86_64 installs, without that interpreter.

A resolver's lock lists every wheel of a release that suits the target; pip would install the
one whose tags come first in the interpreter's preference order (the order of
`packaging.tags.sys_tags`): its own ABI, then the stable ABI of older CPythons, then pure
Python for the platform, then for any platform; within each, the newest glibc first.
"""

from __future__ import annotations

import itertools
import urllib.parse


def supported_tags(python: str, platforms: tuple[str, ...]) -> list[tuple[str, str, str]]:
    """(interpreter, abi, platform) tags CPython X.Y installs on `platforms`, most preferred first."""
    major, minor = (int(p) for p in python.split("."))
    cp = f"cp{major}{minor}"
    pys = [f"py{major}{minor}", f"py{major}"] + [f"py{major}{m}" for m in range(minor - 1, -1, -1)]
    tags = [(cp, abi, p) for abi in (cp, "abi3", "none") for p in platforms]
    tags += [(f"cp{major}{m}", "abi3", p) for m in range(minor - 1, 1, -1) for p in platforms]
    tags += [(py, "none", p) for py in pys for p in platforms]
    return tags + [(cp, "none", "any")] + [(py, "none", "any") for py in pys]


def wheel_tags(filename: str) -> set[tuple[str, str, str]]:
    """The tags a wheel's file name declares (a compressed set such as manylinux_2_17_x86_64.manylinux2014_x86_64)."""
    parts = filename.removesuffix(".whl").split("-")
    if len(parts) < 5:
        return set()
    return set(itertools.product(*(group.split(".") for group in parts[-3:])))


def file_name(url: str) -> str:
    return urllib.parse.unquote(urllib.parse.urlparse(url).path.rsplit("/", 1)[-1])


def best_wheel(wheels: list[dict], python: str, platforms: tuple[str, ...]) -> dict | None:
    """The entry of `wheels` (each with `url` or `name`) the target prefers, or None when none suits it."""
    rank = {tag: i for i, tag in enumerate(supported_tags(python, platforms))}
    best, best_rank = None, len(rank)
    for wheel in wheels:
        name = wheel.get("name") or file_name(wheel.get("url") or wheel.get("path", ""))
        ranks = [rank[t] for t in wheel_tags(name) if t in rank]
        if ranks and min(ranks) < best_rank:
            best, best_rank = wheel, min(ranks)
    return best
