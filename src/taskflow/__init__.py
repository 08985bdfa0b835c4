"""taskflow: task-based workflows for clusters and HPC machines, in pure Python.

Decorate functions with ``@task``; calling them records tasks and returns
futures; ``wait_on`` gives values back. See README.md and the documentation in docs/.
"""
from __future__ import annotations

import importlib
import sys
from typing import TYPE_CHECKING, Any

from ._version import __version__ as __version__

if TYPE_CHECKING:  # what the lazy names below resolve to, for type checkers
    from collections.abc import Iterable, Mapping

    from .future import Future
    from .notebook import Shown
    from .runtime.runtime import Runtime

# The public names are loaded on first use (PEP 562): a node agent or an
# executor imports ``taskflow.agent`` without the API, the runtime and psutil
# (about 60 ms of start-up on the critical path of the first task).
_PARAMETERS = (
    "COLLECTION", "COLLECTION_FILE_IN", "COLLECTION_FILE_INOUT", "COLLECTION_FILE_OUT",
    "COLLECTION_IN", "COLLECTION_INOUT", "COLLECTION_OUT", "COMMUTATIVE", "CONCURRENT",
    "DIRECTORY", "DIRECTORY_IN", "DIRECTORY_INOUT", "DIRECTORY_OUT", "FILE", "FILE_COMMUTATIVE",
    "FILE_CONCURRENT", "FILE_IN", "FILE_IN_STDIN", "FILE_INOUT", "FILE_INOUT_STDERR",
    "FILE_INOUT_STDOUT", "FILE_OUT", "FILE_OUT_STDERR", "FILE_OUT_STDOUT", "IN", "IN_DELETE",
    "INOUT", "OUT", "STDERR", "STDIN", "STDOUT", "STREAM_IN", "STREAM_OUT", "Depth",
    "Direction", "Keep", "Param", "Prefix", "StdIOStream", "Type", "Weight")
_SYNC = ("TaskGroup", "barrier", "barrier_group", "cancel_group", "delete_file",
         "delete_object", "file_exists", "number_of_resources", "open", "wait_on",
         "wait_on_directory", "wait_on_file")
_ERRORS = ("GroupAbort", "NodeLost", "TaskCancelled", "TaskError", "TaskflowError",
           "TaskMemoryExceeded",
           "TaskTimeout", "UsageError")
_EXPORTS: dict[str, str] = {
    **dict.fromkeys(_PARAMETERS, ".api.parameter"),
    **dict.fromkeys(_SYNC, ".api.sync"),
    **dict.fromkeys(_ERRORS, ".errors"),
    "binary": ".api.binary", "constraint": ".api.constraint", "container": ".api.container",
    "mpi": ".api.mpi",
    "multinode": ".api.multinode", "ompss": ".api.ompss", "task": ".api.task",
    "workflow": ".api.workflow", "task_resources": ".api.granted",
    "Executor": ".api.executor",
    "Stream": ".wire.streams", "FileStream": ".wire.streams",
    "StreamClosed": ".wire.streams", "StreamFailed": ".wire.streams",
    "Future": ".future", "ProgramFailed": ".errors", "Runtime": ".runtime.runtime",
    "rerun": ".debugging.rerun",
}


# The decorators that declare tasks: the first one a process asks for says a run is
# likely to follow (see _run_likely).
_DECLARING = frozenset({"task", "binary", "mpi", "multinode", "ompss", "container", "workflow"})
_declared = False       # one of them was asked for in this process


def __getattr__(name: str) -> Any:
    mod = _EXPORTS.get(name)
    if mod is None:
        raise AttributeError(f"module 'taskflow' has no attribute {name!r}")
    if name == "Runtime":       # a run is coming: its local agent loads meanwhile
        from .providers import prestart
        prestart.begin()
    elif name in _DECLARING and not _declared:
        _run_likely()
    value = getattr(importlib.import_module(mod, __name__), name)
    globals()[name] = value
    return value


def _run_likely() -> None:
    """A task decorator's first use in this process (``from taskflow import task``, before
    the API loads): a program that declares tasks runs them, so a local agent starts loading
    now (:mod:`taskflow.providers.prestart`), while the script's imports, the runtime's and
    its start go on (the first result's longest wait was that agent). Once per process, and
    not in a process that runs tasks (an executor importing the script's modules), nor once
    a run has started (the script of ``taskflow run``): those runs have their nodes. Nor in
    a child of :mod:`multiprocessing` (a spawned one imports the script again): its parent
    is the program."""
    global _declared
    _declared = True
    from .context import in_worker
    from .runtime import current
    if in_worker() or current._current is not None:
        return
    mp = sys.modules.get("multiprocessing")       # (loaded in any child it started)
    if mp is not None and mp.parent_process() is not None:
        return
    from .providers import prestart
    prestart.begin()


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


# on_failure values, importable like the direction constants.
RETRY, FAIL, IGNORE, CANCEL_SUCCESSORS = "RETRY", "FAIL", "IGNORE", "CANCEL_SUCCESSORS"


def start(workers: int | None = None, *, monitor: bool | int = False,
          progress: str | None = None, **kwargs: object) -> Runtime:
    """Start a runtime explicitly (notebooks, tests); ``stop()`` ends it.

    ``kwargs`` go to :class:`~taskflow.runtime.runtime.Runtime`. ``monitor=True`` (or a
    port) serves the web monitor of the run. In a Jupyter kernel it also shows the run's
    line, a live progress display in each cell that calls tasks (``progress="auto"``: widgets
    with ipywidgets, else HTML; ``"widgets"``, ``"html"`` or ``"off"``; default
    ``$TASKFLOW_NOTEBOOK_PROGRESS`` or ``"auto"``), cancels the tasks of an interrupted cell, and
    ends the run with the kernel; called again there, it returns the running runtime
    (:mod:`taskflow.notebook.session`). Elsewhere a second call is an error. With
    ``TASKFLOW_INLINE=1`` every task runs in the calling thread (:mod:`taskflow.debugging.inline`).

    Example (a notebook cell, or a script run with plain ``python``)::

        import taskflow
        from taskflow import task, wait_on

        @task(returns=int)
        def square(x: int) -> int:
            return x * x

        taskflow.start(2, retries=1)                      # 2 slots on this machine
        print(wait_on(square(4)))                         # 16
        taskflow.stop()
    """
    from .providers import prestart
    prestart.begin()            # its local agent loads while the runtime does
    from .notebook import session
    return session.start(workers, monitor, progress, kwargs)


def stop(wait: bool = True, code: int = 0) -> None:
    """Wait for all tasks (unless ``wait=False``) and stop the current runtime.

    A ``code`` other than 0 cancels every running and waiting task instead of
    waiting for them, and ``taskflow run`` then exits with that status. In a Jupyter
    kernel it then shows the run: its counts, its failures, the report command.

    Example::

        import taskflow

        taskflow.start()
        ...                                               # call tasks
        taskflow.stop()                                   # waits for them, ends the run
    """
    from .notebook import session
    session.stop(wait, code)


def show(what: Future | Iterable[Future] | Mapping[object, Future] | Runtime) -> Shown:
    """An HTML view of futures (counts by state, failures with your frames), of a future
    or of a run, for a notebook cell (a list has no HTML of its own): ``taskflow.show(fs)``.

    ``print`` of it gives the same as text.

    Example::

        import taskflow
        from taskflow import task

        @task(returns=int)
        def square(x: int) -> int:
            return x * x

        futures = [square(i) for i in range(10)]
        taskflow.show(futures)        # a cell's last line: counts by state, failures
        print(taskflow.show(taskflow.current_runtime()))  # the run, as text
    """
    from .notebook import show as _show
    return _show(what)


def current_runtime() -> Runtime | None:
    """The runtime this program runs in (``taskflow run``, ``taskflow.start()``), or None.

    Example::

        import taskflow

        rt = taskflow.current_runtime()
        print(rt.run_id if rt is not None else "no run")  # the run's id under taskflow run
    """
    from .runtime import current
    return current.get()


__all__ = sorted([*_EXPORTS, "RETRY", "FAIL", "IGNORE", "CANCEL_SUCCESSORS", "start", "stop",
                  "show", "current_runtime"])
