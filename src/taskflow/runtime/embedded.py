"""The embedded default runtime: started by the first task call when none is running.

With no runtime started, the first task call starts a local one (as many
slots as cores) and the end of the program waits for every task, puts files
in place, reports failures and stops it. In a Jupyter kernel it starts the
one ``taskflow.start()`` starts there (:mod:`taskflow.notebook.session`).

The journal says how the program ended, as under ``taskflow run``: an
exception it did not catch (``sys.last_value``, set before ``atexit``
handlers run) or a ``sys.exit(n)`` with n != 0 that ended it is a failed run
with that reason. ``atexit`` cannot see a ``SystemExit``'s status, so
``sys.exit`` is wrapped while the embedded runtime runs to note it; a noted
exit that a handler met on its way up (a ``with`` or ``try`` around it) counts
unless tasks were submitted after it (then it was caught and the program went
on). A bare ``raise SystemExit(n)`` is not seen: ``taskflow run`` sees every end.
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import TYPE_CHECKING, NoReturn

from ..console import plainscript
from . import current

if TYPE_CHECKING:
    from .runtime import Runtime

_lock = threading.Lock()
_registered = False
_exit: SystemExit | None = None     # the last SystemExit sys.exit raised (see the doc)
_exit_calls = 0                     # tasks submitted when it was raised


def get_or_start() -> Runtime:
    """The current runtime, or the embedded one started now."""
    rt = current._current
    if rt is not None:
        return rt
    with _lock:
        if current._current is None:
            _start()
    rt = current._current
    assert rt is not None       # _start() made it current
    return rt


def _start() -> None:
    global _registered
    workers = int(os.environ.get("TASKFLOW_WORKERS", "0")) or None
    from ..notebook import session
    if session.kernel_shell() is not None:      # a task called in a notebook's cell: the
        session.start(workers, False, None, {})  # run taskflow.start() would start there
        return
    from ..providers import prestart
    prestart.begin()                    # its local agent loads while the runtime does
    from .runtime import Runtime        # the whole runtime, only when a program needs it
    from ..debugging import inline      # TASKFLOW_INLINE=1: every task in this thread
    if inline.wanted():
        prestart.discard()              # (no node in an inline run)
    (inline.InlineRuntime if inline.wanted() else Runtime)(workers=workers).start_embedded()
    plainscript.install(_running)   # the script's uncaught error reported as taskflow run does
    if not _registered:
        _registered = True
        atexit.register(_stop)
        _watch_exit()


def _running() -> Runtime | None:
    """The embedded runtime while it runs (not one the script started itself)."""
    rt = current._current
    return rt if rt is not None and rt.embedded and not rt.stopped else None


def _watch_exit() -> None:
    """Wrap ``sys.exit`` so that the status the program exits with is known at exit."""
    real = sys.exit

    def exit(status: object = None) -> NoReturn:
        global _exit, _exit_calls
        rt = current._current
        _exit_calls = rt.tally.submitted if rt is not None else 0
        _exit = exc = SystemExit(status)
        raise exc

    exit.__doc__ = real.__doc__
    exit.__wrapped__ = real         # type: ignore[attr-defined]
    sys.exit = exit


def _program_end(submitted: int) -> BaseException | None:
    """What ended the program: an uncaught exception, or the sys.exit that ended it
    (``submitted``: the tasks the run has been given)."""
    last = getattr(sys, "last_value", None)
    if isinstance(last, BaseException):
        return last
    exc = _exit
    if exc is None:
        return None
    # Python sets an exception's __traceback__ when a handler (except, finally, with) meets
    # it: none at all, it went straight up and ended the program
    if exc.__traceback__ is None:
        return exc
    # a handler met it: re-raised (with, finally), unless the program went on to call tasks
    return exc if submitted == _exit_calls else None


def _stop() -> None:
    rt = current._current
    if rt is None or not rt.embedded:
        return
    end = _program_end(rt.tally.submitted)
    if end is not None:
        rt.script_ended(end)            # the journal says the run failed, and why
    try:
        rt.stop()
    finally:
        plainscript.report_at_exit(rt)      # as taskflow run's end: once, the user's frames
        unhandled = rt.unhandled()
        if not unhandled and rt.end_reason is not None and end is None:  # (else said)
            print(f"taskflow: the run FAILED: {rt.end_reason}", file=sys.stderr)
        # a failed task or record fails the program (its own end: its status stands)
        if unhandled or (rt.end_reason is not None and end is None):
            # atexit cannot change the exit status; os._exit can, once output is flushed.
            sys.stdout.flush()
            sys.stderr.flush()
            from .verdict import exit_status
            os._exit((exit_status(end) or 1) if isinstance(end, SystemExit) else 1)
