"""The embedded default runtime: started by the first task call when none is running.

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

from . import current, plainscript

if TYPE_CHECKING:
    from .runtime import Runtime

_lock = threading.Lock()
_registered = False


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
    from .runtime import Runtime        # the whole runtime, only when a program needs it
    workers = int(os.environ.get("TASKFLOW_WORKERS", "0")) or None
    rt = Runtime(workers=workers)
    rt.embedded = True
    rt.start()
    plainscript.install()       # the script's uncaught error reported as taskflow run does
    if not _registered:
        _registered = True
        atexit.register(_stop)


def _stop() -> None:
    rt = current._current
    if rt is None or not rt.embedded:
        return
    try:
        rt.stop()
    finally:
        plainscript.report_at_exit(rt)      # as taskflow run's end: once, the user's frames
        if rt.failures:
            # atexit cannot change the exit status; os._exit can, once output is flushed.
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(1)
