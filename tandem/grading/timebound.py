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

import cmath
import functools
import json
import logging
import os
import re
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from tandem.errors import TandemError


@functools.lru_cache(maxsize=1024)  # a gold is asked about once per response of its group
def _strict_parse(latex: str, complex_numbers: bool = False):
    """The whole of `latex` as sympy, or an exception: never a part of it.

    math-verify's own `parse` falls back to whatever part of a string it can read (`2` out
    of `\\hbar \\omega(v+1/2) - \\frac{E_0^3 e^2}{...}`), which would make two different
    answers equal; the grader asks only about whole expressions. With `complex_numbers`, the
    letter `i` is the imaginary unit.
    """
    import sympy
    from latex2sympy2_extended import latex2sympy

    parsed = latex2sympy(latex, is_real=not complex_numbers, convert_degrees=False, normalization_config=None)
    if complex_numbers and isinstance(parsed, sympy.Basic):
        parsed = parsed.xreplace({s: sympy.I for s in parsed.free_symbols if getattr(s, "name", "") == "i"})
    return parsed


def _complex_numbers(pred: str, gold: str) -> bool:
    """Whether a pair is about complex numbers: either side writes the imaginary unit, so that both
    sides read `i` alike (math-verify decides it per side: `2 + (-3)i` and `2-3i` read two different
    `i`s). Its test misses `3i` (no word boundary), so the letter `i` standing alone counts too."""
    from math_verify.grader import should_treat_as_complex

    return any(should_treat_as_complex(s) or _STANDALONE_I.search(s) for s in (pred, gold))


_STANDALONE_I = re.compile(r"(?<![A-Za-z\\])i(?![A-Za-z])")


def _numerically_apart(pred, gold) -> bool:
    """Whether two plain sympy expressions differ at a point: their variables set to fixed values
    (positive, irrational-looking), the difference evaluated to 30 digits and clearly not zero.
    A difference that is not zero at one point is not zero, so math-verify's verdict could only
    be refused after it (`_exactly_equal`); anything that does not evaluate to a number says no."""
    import sympy

    if not (isinstance(pred, sympy.Expr) and isinstance(gold, sympy.Expr)):
        return False
    diff = pred - gold
    symbols = sorted(pred.free_symbols | gold.free_symbols, key=str)
    if any(not isinstance(s, sympy.Symbol) for s in symbols):
        return False
    point = {s: sympy.Rational(7 + 3 * k, 11 + 2 * k) + sympy.sqrt(2 + k) / 10 for k, s in enumerate(symbols)}
    try:
        values = [complex(sympy.N(e.xreplace(point), 30)) for e in (diff, pred, gold)]
    except (TypeError, ValueError, ArithmeticError):  # not a number there (`x(t)`, `\infty`): no decision
        return False
    try:
        scale = max(1.0, abs(values[1]), abs(values[2]))
        return all(map(cmath.isfinite, values)) and abs(values[0]) > 1e-20 * scale
    except Exception:  # noqa: BLE001 - a value that cannot be computed decides nothing
        return False


def _exactly_equal(pred, gold) -> bool:
    """math-verify compares `(a - b).evalf(chop=True) == 0`, which pays `\\pi + 10^{-30}` for
    `\\pi`; two plain expressions must also have an exactly zero difference."""
    import sympy

    if not (isinstance(pred, sympy.Expr) and isinstance(gold, sympy.Expr)):
        return True  # relations, sets, matrices: math-verify's structural comparison stands
    return sympy.simplify(pred - gold) == 0


UNREADABLE = "unparsed"  # math-verify's verdict when it cannot read a side whole


def math_verify_equal(pred: str, gold: str) -> bool | str:
    """math-verify's verdict on two whole LaTeX expressions, unbounded (its own signal-based
    timeouts switched off), or `UNREADABLE` when it cannot read one of them whole."""
    import math_verify

    logging.getLogger("math_verify").setLevel(logging.ERROR)
    complex_numbers = _complex_numbers(pred, gold)
    try:
        gold_parsed, pred_parsed = _strict_parse(gold, complex_numbers), _strict_parse(pred, complex_numbers)
    except Exception:  # noqa: BLE001 - latex2sympy raises many kinds; each means "not read whole"
        return UNREADABLE
    if _numerically_apart(pred_parsed, gold_parsed):
        return False
    if not math_verify.verify(gold_parsed, pred_parsed, timeout_seconds=None):
        return False
    return _exactly_equal(pred_parsed, gold_parsed)


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
    `__main__` and may be started from daemonic pool workers. Killed on timeout; a spare
    child is kept started beside it, so the call after a timeout finds a worker that has
    already imported math-verify instead of waiting 1-2 s for a new one. Every wait (the
    lock, a worker still starting, the verdict) counts against the call's own bound.
    """

    START_TIMEOUT_S = 60.0  # a child not ready by then is broken: the thread bound takes over

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.ready = False
        self.started_at = 0.0
        self.spare: tuple[subprocess.Popen, float] | None = None
        self.spare_ready = False
        self.warmed = False  # wait_ready has run: later calls wait for a worker only within their bound

    @staticmethod
    def _spawn() -> tuple[subprocess.Popen, float]:
        env = dict(os.environ)
        root = str(Path(__file__).resolve().parents[1])  # importable even from an uninstalled checkout
        env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
        proc = subprocess.Popen(
            [sys.executable, "-m", "tandem.grading.grade_worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=env, text=True, bufsize=1,
        )
        return proc, time.monotonic()

    def _take(self) -> None:
        """A live worker in `self.proc`: the spare, if one is waiting."""
        if self.proc is None or self.proc.poll() is not None:
            self.proc, self.started_at = self.spare or self._spawn()
            self.ready = self.spare is not None and self.spare_ready
            self.spare, self.spare_ready = None, False

    def _keep_spare(self) -> None:
        """A spare beside the worker, started after a call, so its import never competes with one."""
        if self.spare is None or self.spare[0].poll() is not None:
            self.spare, self.spare_ready = self._spawn(), False

    def _stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
        self.proc, self.ready = None, False

    def _read_line(self, timeout_s: float) -> str | None:
        ready, _, _ = select.select([self.proc.stdout], [], [], max(timeout_s, 0.0))
        return self.proc.stdout.readline().strip() if ready else None  # "" = the child died

    def _await_ready(self, deadline: float) -> bool:
        """Whether the worker is ready before `deadline`; raises OSError if it never will be."""
        if not self.ready:
            line = self._read_line(min(deadline, self.started_at + self.START_TIMEOUT_S) - time.monotonic())
            if line == "ready":
                self.ready = True
            elif line is not None or time.monotonic() > self.started_at + self.START_TIMEOUT_S:
                self._stop()
                raise OSError("the grading worker process did not start")
        return self.ready

    def wait_ready(self) -> None:
        """Start the worker and its spare and wait until both have imported math-verify."""
        with self.lock:
            self._take()
            self._await_ready(time.monotonic() + self.START_TIMEOUT_S)
            self._keep_spare()
            if not self.spare_ready:
                spare = self.spare[0]
                ready, _, _ = select.select([spare.stdout], [], [], self.START_TIMEOUT_S)
                self.spare_ready = bool(ready) and spare.stdout.readline().strip() == "ready"
            self.warmed = True


    def call(self, pred: str, gold: str, timeout_s: float) -> bool | str | None:
        deadline = time.monotonic() + timeout_s
        if not self.lock.acquire(timeout=max(timeout_s, 0.0)):
            return None  # another thread's call held the worker past this call's bound
        try:
            self._take()
            if not self._await_ready(deadline):
                return None  # still starting: a timeout; it stays for the next call
            self.proc.stdin.write(json.dumps([pred, gold]) + "\n")
            self.proc.stdin.flush()
            line = self._read_line(deadline - time.monotonic())
            if not line:
                self._stop()
                return None if line is None else "error: the grading worker died"
            return json.loads(line)
        finally:
            self._keep_spare()
            self.lock.release()

    def forget(self) -> None:
        """In a forked child: the parent's workers and lock are not ours to use."""
        self.lock, self.proc, self.ready, self.spare, self.spare_ready = threading.Lock(), None, False, None, False
        self.warmed = False


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


_WARM = threading.Event()


def _uses_worker() -> bool:
    return os.name == "posix" and not _signal_bound_available()


def is_warm() -> bool:
    """Whether a call from this thread would start grading at once (nothing left to import or start)."""
    return _WARM.is_set() and (not _uses_worker() or _WORKER.warmed)


def _import_once() -> None:
    if not _WARM.is_set():
        require_math_verify()
        math_verify_equal("1", "1")
        _WARM.set()


def warm_up() -> None:
    """Import math-verify and load its LaTeX grammar (about 1.4 s), once per process, and from
    a thread that grades through the worker process, start that worker and its spare.

    Entry points that grade call it at start-up, so that no grading call pays for it inside
    its time bound; a call that finds it not done yet does it before its clock starts.
    """
    _import_once()
    if _uses_worker() and not _WORKER.warmed:  # a thread that grades through the worker
        try:
            _WORKER.wait_ready()
        except OSError:
            pass  # bounded_math_verify falls back to the thread bound


def bounded_math_verify(pred: str, gold: str, timeout_s: float) -> bool | str | None:
    """True/False, None if `timeout_s` passed first, `UNREADABLE` if math-verify cannot read a
    side whole, or "error: ..." if it raised."""
    _import_once()  # a missing package is a setup mistake, not an incorrect answer
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
