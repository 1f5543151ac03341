"""One writer per output folder: a lock file holding the writer's PID and host.

Every command that writes a run (`train`, `sft`, `demo`, the eval tools, the HF TRL
example) holds `FOLDER/run.lock` while it writes. A second process on the same folder
is refused with one line naming the holder, so two writers can never interleave a
folder's metrics, config and checkpoint. A lock left by a process that died (a SIGKILL,
a power cut) names a PID that no longer runs on this host: it is taken over with a note.
A lock from another host cannot be checked and is never taken over.

The lock is written under a temporary name and hard-linked into place, so of two
processes racing for a free folder exactly one wins and nobody reads a lock without its
holder. Within one process the lock is re-entrant (the demo holds its
folder while its phases lock their own subfolders, and nested calls on one folder are
harmless).

A folder that cannot be written (read-only, no permission, a full disk) is one line
naming it and the fix, before any work. A run refused or stopped before it wrote
anything leaves no folder behind that it created (`hold` removes the folders it made
while they are empty; it never removes a file).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import time
from pathlib import Path

from tandem.errors import TandemError

LOCK_NAME = "run.lock"

_held: dict[Path, int] = {}  # folders this process holds -> nesting depth
_made: dict[Path, list[Path]] = {}  # held folder -> the folders `acquire` created for it, deepest first


def note(message: str) -> None:
    """One `note: ...` line on stderr: something the run did for the user that they should know."""
    print(f"note: {message}", file=sys.stderr, flush=True)


def check_new_run_folder(out: str | os.PathLike) -> None:
    """A new run (no --resume) needs a folder that is absent or holds nothing but a lock; torch-free, so a
    command can refuse a taken --out at once, before it imports or loads anything."""
    out = Path(out)
    if out.is_dir() and any(p.name != LOCK_NAME for p in out.iterdir()):
        raise TandemError(f"{out} is not empty; pass --resume to continue that run or choose a new --out")


def check_out_path(out: str | os.PathLike, flag: str = "--out") -> Path:
    """A path that names a file, or lies under one, is one clear error (checked before any slow work)."""
    out = Path(out)
    for p in (out, *out.parents):
        if p.exists() and not p.is_dir():
            where = "is a file" if p == out else f"lies under {p}, which is a file"
            raise TandemError(f"{flag} {out} {where}; choose a folder path for {flag}")
    return out


def check_out_file(out: str | os.PathLike, flag: str = "--out") -> Path:
    """A file to write (or a stem its files share): a path that is a folder, or lies under a file, is one
    clear error before any work, not an OSError when the result is written."""
    out = Path(out)
    if out.is_dir():
        raise TandemError(f"{flag} {out} is a folder; name a file for {flag}")
    for p in out.parents:
        if p.exists() and not p.is_dir():
            raise TandemError(f"{flag} {out} lies under {p}, which is a file; choose a path in a folder")
    return out


def prepare_out_dir(out: str | os.PathLike, flag: str = "--out") -> Path:
    """Create the output folder (`check_out_path` first)."""
    out = check_out_path(out, flag)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise TandemError(f"{flag} {out} cannot be created ({e.strerror}); choose a writable folder") from None
    return out


def _missing(out: Path) -> list[Path]:
    """The folders `out.mkdir(parents=True)` would create, deepest first."""
    return [p for p in (out, *out.parents) if not p.exists()]


def remove_if_empty(folders: list[Path]) -> None:
    """Remove each folder (deepest first) while it is empty; stop at the first that is not."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty (the run wrote something), or already gone: keep everything
            return


def unwritable(flag: str, folder: Path, e: OSError) -> TandemError:
    """The one line for a folder a run cannot write in (read-only, no permission, a full disk)."""
    return TandemError(f"{flag} {folder} cannot be written ({e.strerror or e}); choose a writable {flag}, or make "
                       "it writable (permissions, a read-write mount, free space)")


def _zombie(pid: int) -> bool:
    """Whether `pid` has ended but not been reaped (Linux's /proc; elsewhere: not known, so no).

    A killed run's child can stay a zombie for good where nothing reaps orphans (PID 1 of
    many containers): signal 0 still reaches it, yet it holds nothing.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2 :][:1] in ("Z", "X")  # the state follows the command's closing paren


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return not _zombie(pid)


def _read_holder(path: Path) -> dict:
    try:
        holder = json.loads(path.read_text(encoding="utf-8"))
        return holder if isinstance(holder, dict) else {}
    except (OSError, json.JSONDecodeError):  # a lock written by a process killed mid-write
        return {}


def _try_create(path: Path) -> bool:
    """Create `path` holding this process's PID and host, only if it does not exist (atomic, content included)."""
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "since": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
              "command": " ".join(sys.argv)}
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(json.dumps(holder) + "\n", encoding="utf-8")
        os.link(tmp, path)  # a reader never sees the lock without its holder
        return True
    except FileExistsError:
        return False
    finally:
        with contextlib.suppress(OSError):  # never written (a read-only folder): nothing to remove
            tmp.unlink()


def acquire(out: str | os.PathLike, flag: str = "--out") -> Path:
    """Take `out`'s lock (creating the folder); refuse when a live process holds it. Returns the key `release` takes."""
    made = _missing(check_out_path(out, flag))
    shown = prepare_out_dir(out, flag)  # messages keep the user's spelling
    out = shown.resolve()
    if out in _held:
        _held[out] += 1
        return out
    path = shown / LOCK_NAME
    for _ in range(3):  # a stale lock removed by a racing process: try again
        try:
            created = _try_create(path)
        except OSError as e:
            remove_if_empty(made)
            raise unwritable(flag, shown, e) from None
        if created:
            _held[out] = 1
            _made[out] = made
            return out
        holder = _read_holder(path)
        pid, host = holder.get("pid"), holder.get("host")
        here = socket.gethostname()
        if isinstance(pid, int) and host == here and _alive(pid):
            remove_if_empty(made)
            raise TandemError(f"{flag} {shown} is in use by PID {pid} on {host} (since {holder.get('since', '?')}; "
                              f"{path}); wait for it to finish or choose another {flag}")
        if host not in (None, here) and isinstance(pid, int):
            remove_if_empty(made)
            raise TandemError(f"{flag} {shown} is locked by PID {pid} on host {host} ({path}); this host cannot check "
                              f"that process: delete the lock if it has ended, or choose another {flag}")
        what = f"PID {pid} on {host}" if isinstance(pid, int) else "an unreadable lock"
        note(f"{path}: {what} is no longer running; taking the folder over")
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    raise TandemError(f"{flag} {shown}: could not take {path}; another process keeps taking it, try again")


def release(out: Path, failed: bool = False) -> None:
    """Give `out` back; with `failed`, also remove the folders `acquire` created for it if the run left them empty."""
    depth = _held.get(out, 0) - 1
    if depth > 0:
        _held[out] = depth
        return
    _held.pop(out, None)
    made = _made.pop(out, [])
    path = out / LOCK_NAME
    if _read_holder(path).get("pid") == os.getpid():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    if failed:
        remove_if_empty(made)


@contextlib.contextmanager
def hold(out: str | os.PathLike, flag: str = "--out"):
    """`with hold(out):` the folder is this process's until the block ends (however it ends).

    A block that raises before writing anything leaves no folder that `acquire` created."""
    locked = acquire(out, flag)
    try:
        yield locked
    except BaseException:
        release(locked, failed=True)
        raise
    release(locked)
