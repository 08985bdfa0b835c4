"""The executor imports the script's modules before its first task (PRELOAD frames).

A script that imports heavy libraries (numpy, scipy, scikit-learn) used to pay
their import a second time at its first task: loading the task's function on a
fresh executor imports what it refers to. The master sends the modules the
script imports as soon as it imports them (:mod:`taskflow.runtime.loop.preload`);
the executor imports them in a thread of its own while the script still starts,
each name on its own: one that fails (not installed on this node, raising at
import) is skipped and said at debug level, never the run's failure.

Tasks and functions wait for those imports to end (:func:`settled`) rather than
import the same packages concurrently from two threads (a circular import
between two threads can hand one of them a module not initialised yet); they
wait at most :data:`WAIT` seconds, so an import that hangs on this node keeps
no task from running. A frame of names is bounded by the master
(``MAX_MODULES``).
"""
from __future__ import annotations

import importlib
import threading

WAIT = 60.0     # s a task waits at most for the imports ahead of it (then it runs anyway)


class _Loading:
    """The thread importing the names received, and the names still to import."""

    __slots__ = ("thread", "todo", "lock")

    def __init__(self) -> None:
        self.thread: threading.Thread | None = None
        self.todo: list[str] = []
        self.lock = threading.Lock()


LOADING = _Loading()


def start(names: list[str]) -> None:
    """Import ``names`` in the background (a PRELOAD frame's)."""
    st = LOADING
    with st.lock:
        st.todo.extend(names)
        if st.thread is not None:           # (it takes the new names before it ends)
            return
        st.thread = threading.Thread(target=_import_all, name="taskflow-preload", daemon=True)
        st.thread.start()


def settled() -> None:
    """Before a task or a function loads: the imports ahead of it are over (or ``WAIT``
    seconds passed)."""
    t = LOADING.thread
    if t is not None:
        t.join(WAIT)


def _import_all() -> None:
    st = LOADING
    while True:
        with st.lock:
            if not st.todo:
                st.thread = None
                return
            name = st.todo.pop(0)
        try:
            importlib.import_module(name)
        except BaseException as exc:  # noqa: BLE001 - a module's import may raise anything
            import logging      # (here, not at the top: it is the agent's start-up time)
            logging.getLogger(__name__).debug(
                "taskflow: preloading module %s failed on this node (ignored): %s: %s",
                name, type(exc).__name__, exc)
