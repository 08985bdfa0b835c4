"""Plain ``python script.py``: its failures reported as ``taskflow run`` reports them, once.

When the first task call starts the embedded runtime (:mod:`taskflow.runtime.embedded`), an
exception the script does not catch would be printed by Python: a 40-line
traceback through taskflow's own frames, the remote traceback inside the
message, and then the end of the run would list the failure again. Instead
:func:`install` puts a ``sys.excepthook`` in place that keeps the exception
(and says so in one line when tasks are still running: the run waits for
them, as ``taskflow run`` does), and :func:`report_at_exit`, called when the
embedded run stops, prints :func:`.failures.end_of_run`'s text: the
script's error with only the user's frames, each failed task's block, the
summary line. Nothing changes for a script that ends well, for
``KeyboardInterrupt``, or when the runtime the script started itself is no
longer the embedded one.
"""
from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .view import EmbeddedRun, RunView

_previous: Any = None                           # the hook ours replaced
_script_exc: BaseException | None = None        # what the script raised, for the report
_running: Callable[[], EmbeddedRun | None] | None = None   # the embedded run, while it runs


def install(running: Callable[[], EmbeddedRun | None]) -> None:
    """Take over ``sys.excepthook`` for the embedded run (once); ``running()`` is that run
    while it runs (None once it stopped, or when the script's run is another one)."""
    global _previous, _running
    _running = running
    if _previous is None:
        _previous = sys.excepthook
        sys.excepthook = _hook


def _hook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
    global _script_exc
    rt = _running() if _running is not None else None
    if rt is None or isinstance(exc, KeyboardInterrupt):
        (_previous or sys.__excepthook__)(kind, exc, tb)
        return
    _script_exc = exc
    try:
        done = rt.wait_all(1.0)         # most runs end now; a long one gets a word
    except BaseException:  # noqa: BLE001 - Ctrl-C here: the report comes at exit anyway
        done = False
    if not done and rt.tally.active:
        print(f"taskflow: the script raised {kind.__name__}; waiting for {rt.tally.active} "
              f"task(s) still to end before the report (Ctrl-C stops them)", file=sys.stderr)
        sys.stderr.flush()


def report_at_exit(rt: RunView) -> None:
    """The end-of-run report, when the run failed or the script raised (else nothing)."""
    global _script_exc
    exc, _script_exc = _script_exc, None
    if exc is None and not rt.unhandled():
        return
    from .bars import summary
    from .failures import end_of_run
    print(end_of_run(rt, exc, summary(rt, time.time() - rt.t_start)), file=sys.stderr)
