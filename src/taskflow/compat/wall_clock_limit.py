"""The application's wall clock limit (``runcompss --wall_clock_limit``, ``compss_set_wall_clock``).

When the limit is reached a timer thread cancels every task that has not
ended (running programs get SIGTERM), then interrupts the main program with
:class:`WallClockLimit` (a SIGALRM sent to the main thread, whose handler
raises it there); the launcher reports it and stops the run. The main
thread never does runtime work from inside the signal handler.
"""
from __future__ import annotations

import signal
import threading
import time

from ..runtime import current


class WallClockLimit(BaseException):
    """The application ran out of its wall clock limit (not an ordinary exception:
    ``except Exception`` in the application does not swallow it)."""


_timer: threading.Timer | None = None
_limit = 0.0
_t0 = 0.0
reached = threading.Event()


def _handler(signum: int, frame: object) -> None:
    if reached.is_set():
        raise limit_reached()


def limit_reached() -> WallClockLimit:
    """The error the application stops with (the launcher also makes it of the
    KeyboardInterrupt that stops an application whose limit was armed from another thread)."""
    return WallClockLimit(f"wall clock limit of {_limit:g} s reached")


def arm(seconds: float) -> None:
    """Stop the application ``seconds`` from now (0 or less: no limit)."""
    global _timer, _limit, _t0
    disarm()
    if seconds <= 0:
        return
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGALRM, _handler)
    _limit, _t0 = seconds, time.time()
    _timer = threading.Timer(seconds, _fire)
    _timer.daemon = True
    _timer.start()


def disarm() -> None:
    global _timer
    if _timer is not None:
        _timer.cancel()
        _timer = None


def _fire() -> None:
    reached.set()
    rt = current.get()
    if rt is not None and rt.started and not rt.stopped:
        rt.cancel_all(f"the application's wall clock limit of {_limit:g} s was reached")
    if signal.getsignal(signal.SIGALRM) is _handler:
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGALRM)
    else:                   # armed from another thread: no handler of ours in the main one
        import _thread
        _thread.interrupt_main()
