"""math-verify under a hard time bound, in whatever thread the caller is.

`bounded_math_verify(pred, gold, timeout_s)` returns True / False, None on timeout, or an
"error: ..." string if math-verify raised. math-verify's own timeouts use SIGALRM and only
work in the main thread, so they are switched off and replaced by:

- main thread (and no interval timer of the caller running): our own `SIGALRM` timer
  (`setitimer`), raising a BaseException that math-verify's `except Exception` cannot
  swallow. No process, microseconds of overhead.
- any other thread: a persistent worker subprocess (`python -m tandem.grading.grade_worker`)
  fed JSON lines, killed and restarted on timeout. A plain subprocess, not multiprocessing:
  it never re-imports the caller's `__main__` and may be started from daemonic pool workers.
- no subprocess possible (or not POSIX): a daemon thread, abandoned on timeout.
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tandem.errors import TandemError


def math_verify_equal(pred: str, gold: str) -> bool:
    """math-verify's verdict, unbounded (its own signal-based timeouts switched off)."""
    import math_verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    gold_parsed = math_verify.parse(f"${gold}$", parsing_timeout=None, raise_on_error=False)
    pred_parsed = math_verify.parse(f"${pred}$", parsing_timeout=None, raise_on_error=False)
    if not gold_parsed or not pred_parsed:
        return False
    return bool(math_verify.verify(gold_parsed, pred_parsed, timeout_seconds=None))


class GraderTimeout(BaseException):
    """Raised by the alarm. A BaseException, so math-verify's `except Exception` cannot swallow it."""


def _signal_bound_available() -> bool:
    return (
        os.name == "posix"
        and threading.current_thread() is threading.main_thread()
        and signal.getitimer(signal.ITIMER_REAL)[0] == 0.0  # never clobber a caller's timer
    )


REARM_S = 0.05  # the alarm repeats at this interval until the call returns


def _with_signal_bound(pred: str, gold: str, timeout_s: float) -> bool | None:
    """math-verify under a SIGALRM deadline, in the main thread.

    The alarm repeats: a bare `except:` deep in sympy or mpmath can swallow one timeout
    (seen under pytest-xdist: the grader then ran for minutes), so it fires again until
    the exception gets through. Once the call is over the handler stands down, and it
    also cancels the timer itself if the cleanup below was ever cut short.
    """
    active, hard_stop = [True], time.monotonic() + timeout_s + 60.0

    def on_alarm(signum, frame):
        if active[0] and time.monotonic() < hard_stop:
            raise GraderTimeout()
        signal.setitimer(signal.ITIMER_REAL, 0)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, timeout_s, REARM_S)
        return math_verify_equal(pred, gold)
    except GraderTimeout:
        return None
    finally:
        active[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class _WorkerProcess:
    """One persistent `python -m tandem.grading.grade_worker` child, shared by all threads.

    A plain subprocess rather than multiprocessing: it never re-imports the caller's
    `__main__` and may be started from daemonic pool workers. Killed and restarted on timeout.
    """

    START_TIMEOUT_S = 60.0

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None

    def _start(self) -> None:
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[1])  # importable even from an uninstalled checkout
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tandem.grading.grade_worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, text=True, bufsize=1,
        )
        if self._read_line(self.START_TIMEOUT_S) != "ready":
            self._stop()
            raise OSError("the grading worker process did not start")

    def _stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def _read_line(self, timeout_s: float) -> str | None:
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout_s)
        return self.proc.stdout.readline().strip() if ready else None  # "" = the child died

    def call(self, pred: str, gold: str, timeout_s: float) -> bool | str | None:
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            self.proc.stdin.write(json.dumps([pred, gold]) + "\n")
            self.proc.stdin.flush()
            line = self._read_line(timeout_s)
            if not line:
                self._stop()
                return None if line is None else "error: the grading worker died"
            return json.loads(line)


    def forget(self) -> None:
        """In a forked child: the parent's worker and lock are not ours to use."""
        self.lock, self.proc = threading.Lock(), None


_WORKER = _WorkerProcess()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_WORKER.forget)


def _with_thread_bound(pred: str, gold: str, timeout_s: float) -> bool | str | None:
    """Last resort where no process can be started: a daemon thread, abandoned on timeout."""
    box: list = []

    def target():
        try:
            box.append(math_verify_equal(pred, gold))
        except Exception as e:  # noqa: BLE001
            box.append(f"error: {type(e).__name__}")

    thread = threading.Thread(target=target, daemon=True, name="tandem-grader")
    thread.start()
    thread.join(timeout_s)
    return box[0] if box else None


def require_math_verify() -> None:
    try:
        import math_verify  # noqa: F401
    except ImportError:
        raise TandemError("grading needs math-verify: pip install 'tandem-rlvr[eval]' (or math-verify)") from None


def bounded_math_verify(pred: str, gold: str, timeout_s: float) -> bool | str | None:
    """True/False, None if `timeout_s` passed first, or "error: ..." if math-verify raised."""
    require_math_verify()  # a missing package is a setup mistake, not an incorrect answer
    if _signal_bound_available():
        try:
            return _with_signal_bound(pred, gold, timeout_s)
        except GraderTimeout:  # a repeat alarm that landed in the cleanup
            return None
        except Exception as e:  # noqa: BLE001 - any failure grades as incorrect
            return f"error: {type(e).__name__}"
    if os.name == "posix":
        try:
            return _WORKER.call(pred, gold, timeout_s)
        except OSError:
            pass
    return _with_thread_bound(pred, gold, timeout_s)
