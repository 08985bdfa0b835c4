"""How a delivery of the bus travels to the journal's writer process: one pickle.

The rows and events hold references, not copies: a task's row carries its
:class:`~taskflow.graph.spec.TaskSpec` (with its function) and the futures of
its resolved arguments; a ``failed`` event carries the error. Instead of
rebuilding every row and event as plain values in Python (which cost the
master's GIL about a microsecond per task), the pickler's dispatch table
reduces those three kinds of objects as they are met:

- a TaskSpec becomes its :data:`SpecInfo` ``(function, constraints JSON,
  parameter names, task name)``, once per batch (pickle memoises it) and once
  per run (cached here);
- a Future becomes ``(data id, path)``, a file version's path being the user's;
- a taskflow error becomes its :data:`ErrorInfo` ``(text, remote traceback,
  exit code)``.

Everything else is plain already (numbers, strings, the call's scalar
arguments; the events' named tuples are plain tuples by then: ``writer.py``).
The writer process reads the reduced forms (:mod:`.changes`).
"""
from __future__ import annotations

import copyreg
import io
import json
import pickle
from typing import Any, Optional

from .. import errors
from ..future import Future
from ..graph.spec import TaskSpec
from ..graph.task import error_exit_code
from .text import short

# A task function as the journal's writer process knows it (its ``specs`` row).
SpecInfo = tuple[str, str, tuple[str, ...], str]   # (function, constraints JSON, names, name)
# A task's error as the writer process knows it: (text, remote traceback, exit code).
ErrorInfo = tuple[str, Optional[str], Optional[int]]


def constraints_text(spec: TaskSpec) -> str:
    """The ``constraints`` column of a task function's ``specs`` row: JSON of what it
    declares besides the defaults (units, memory, time-out, failure policy, invoker,
    accepted hints, a program's stream parameters)."""
    c: dict[str, Any] = {"computing_units": spec.computing_units}
    if spec.memory_size:
        c["memory_size"] = spec.memory_size
    for k, v in (("processors", spec.processors), ("time_out", spec.time_out),
                 ("on_failure", spec.on_failure), ("priority", spec.priority),
                 ("invoker", spec.invoker)):
        if v and v != "python" and not (k == "on_failure" and v == "RETRY"):
            c[k] = v if isinstance(v, (int, float, str)) else short(v, 200)
    recorded = spec.recorded       # hints accepted with no effect (PyCOMPSs)
    if recorded:
        c["recorded"] = {k: v if isinstance(v, (int, float, str, bool)) else short(v, 100)
                         for k, v in recorded.items()}
    program = spec.program
    params = program.line.params if program is not None else {}
    streams = {name: p.stream for name, p in params.items() if p.stream}
    if streams:         # a program's stdin/stdout/stderr bound to a file parameter
        c["streams"] = streams
    return json.dumps(c)


def spec_info(spec: TaskSpec) -> SpecInfo:
    f = spec.func
    return (f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', '?')}",
            constraints_text(spec), tuple(spec.names or ()), spec.name)


class EventPickler(pickle.Pickler):
    """A pickler for the bus's deliveries; keeps the per-spec summaries between them."""

    def __init__(self) -> None:
        self._buf = io.BytesIO()
        super().__init__(self._buf, pickle.HIGHEST_PROTOCOL)
        self._specs: dict[int, tuple[SpecInfo, TaskSpec]] = {}
        table = copyreg.dispatch_table.copy()
        table[TaskSpec] = self._reduce_spec
        table[Future] = _reduce_future
        for obj in vars(errors).values():
            if isinstance(obj, type) and issubclass(obj, BaseException):
                table[obj] = _reduce_error
        self.dispatch_table = self._table = table
        self._duals = 0     # errors.dual_classes() known to the table

    def _add_duals(self) -> None:
        """Errors made for a task's own exception (``TaskError(ZeroDivisionError)``) are
        classes of the run's: each reaches the writer as plain data too."""
        duals = errors.dual_classes()
        for cls in duals:
            self._table[cls] = _reduce_error
        self._duals = len(duals)

    def _reduce_spec(self, spec: TaskSpec) -> tuple[Any, ...]:
        info = self._specs.get(id(spec))
        if info is None:
            info = self._specs[id(spec)] = (spec_info(spec), spec)   # (keeps id() valid)
        summary, _ = info
        return tuple, (summary,)

    def dumps(self, obj: Any) -> bytes:
        if errors.dual_count() != self._duals:
            self._add_duals()
        buf = self._buf
        buf.seek(0)
        buf.truncate()
        self.clear_memo()
        self.dump(obj)
        self.clear_memo()        # the memo would keep the whole batch alive until the next
        return buf.getvalue()


def _reduce_future(fut: Future) -> tuple[Any, ...]:
    # a file version: the user's path (the version's own path is gone after the run)
    item = fut._item
    return tuple, ((fut._did, item.path if item is not None and item.path else fut._path),)


def _reduce_error(err: BaseException) -> tuple[Any, ...]:
    info: ErrorInfo = (str(err), getattr(err, "remote_traceback", "") or None,
                       error_exit_code(err))
    return tuple, (info,)
