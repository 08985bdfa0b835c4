"""The runtime the API functions talk to, and the embedded default.

With no runtime started, the first task call starts a local one (as many
slots as cores) and the end of the program waits for every task, puts files
in place, reports failures and stops it.
"""
from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .runtime import Runtime

_current: Runtime | None = None
_lock = threading.Lock()
_embedded_registered = False


def set_current(rt: Runtime) -> None:
    global _current
    _current = rt


def clear_current(rt: Runtime) -> None:
    global _current
    if _current is rt:
        _current = None


def get() -> Runtime | None:
    return _current


def get_or_start() -> Runtime:
    rt = _current
    if rt is not None:
        return rt
    with _lock:
        if _current is None:
            _start_embedded()
    assert _current is not None     # _start_embedded() set it
    return _current


def _start_embedded() -> None:
    global _embedded_registered
    from .runtime import Runtime
    workers = int(os.environ.get("TASKFLOW_WORKERS", "0")) or None
    rt = Runtime(workers=workers)
    rt.embedded = True
    rt.start()
    if not _embedded_registered:
        _embedded_registered = True
        atexit.register(_stop_embedded)


def _stop_embedded() -> None:
    rt = _current
    if rt is None or not rt.embedded:
        return
    try:
        rt.stop()
    finally:
        errs = rt.unreported_failures()
        if errs:
            from .failreport import failure_lines
            for line in failure_lines(rt, errs=list(errs)):
                print(line if line.startswith(" ") else "taskflow: " + line, file=sys.stderr)
        if rt.failures:
            print(f"taskflow: {len(rt.failures)} task(s) failed", file=sys.stderr)
            # atexit cannot change the exit status; os._exit can, once output is flushed.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)
