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
  exit code)``;
- a large argument's snapshot (:class:`~taskflow.graph.recorded.Snapshot`) becomes
  ``(pickle bytes, futures, (type, length))``: the writer hashes the bytes and shows
  the value by digest (:func:`.text.params_text`).

Everything else is plain already (numbers, strings, the call's scalar
arguments; the events' named tuples are plain tuples by then: ``writer.py``).
The writer process reads the reduced forms (:mod:`.changes`).

The writer process takes plain data only: it loads none of the program's
modules, so an object of the program's own classes would end it
(``No module named 'my_class'``) and with it the run. Such objects do reach a
row: a dictionary collection's keys stay in the call's arguments, and its
keys are in its references' paths. So the pickler reduces every object that
is not of a builtin type (:meth:`EventPickler.reducer_override`, called only
for those: nothing for rows of plain values) to plain data as it is met: a
number of a subclass of int or float to the number, an instance of a subclass
of tuple, list, dict, set, str or bytes to the builtin with its content, an
exception to its :data:`ErrorInfo`, anything else to its repr
(:class:`.text.Shown`). The
writer refuses any other class a delivery names (``child.py``).
"""
from __future__ import annotations

import io
import json
import pickle
from typing import Any, Optional

from ..future import Future
from ..graph.recorded import Snapshot
from ..graph.spec import TaskSpec
from ..graph.task import error_exit_code
from .text import Shown, short

# A task function as the journal's writer process knows it (its ``specs`` row).
SpecInfo = tuple[str, str, tuple[str, ...], str]   # (function, constraints JSON, names, name)
# A task's error as the writer process knows it: (text, remote traceback, exit code).
ErrorInfo = tuple[str, Optional[str], Optional[int]]


def constraints_text(spec: TaskSpec) -> str:
    """The ``constraints`` column of a task function's ``specs`` row: JSON of what it
    declares besides the defaults (units, memory, time-out, failure policy, invoker,
    accepted hints, a program's stream parameters, the program and its MPI runner as
    declared: ``$VAR`` unexpanded)."""
    c: dict[str, Any] = {"computing_units": spec.computing_units}
    if spec.memory_size:
        c["memory_size"] = spec.memory_size
    for k, v in (("processors", spec.processors), ("time_out", spec.time_out),
                 ("on_failure", spec.on_failure), ("priority", spec.priority),
                 ("invoker", spec.invoker)):
        if v and v != "python" and not (k == "on_failure" and v == "RETRY"):
            c[k] = v if isinstance(v, (int, float, str)) else short(v, 200)
    if spec.resources:             # named resources and variants asked for
        c["resources"] = {str(k): v for k, v in spec.resources.items()}
    if spec.variants:
        c["variants"] = [dict(v) for v in spec.variants]
    recorded = spec.recorded       # hints accepted with no effect (PyCOMPSs)
    if recorded:
        c["recorded"] = {k: v if isinstance(v, (int, float, str, bool)) else short(v, 100)
                         for k, v in recorded.items()}
    program = spec.program
    params = program.line.params if program is not None else {}
    streams = {name: p.stream for name, p in params.items() if p.stream}
    if streams:         # a program's stdin/stdout/stderr bound to a file parameter
        c["streams"] = streams
    binary = getattr(program, "binary", None)
    if isinstance(binary, str) and binary:      # the program it runs (a crate names it)
        c["binary"] = binary
    runner = getattr(program, "runner", None)
    if isinstance(runner, str) and runner:
        c["runner"] = runner
    return json.dumps(c)


def spec_info(spec: TaskSpec) -> SpecInfo:
    f = spec.func
    return (f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', '?')}",
            constraints_text(spec), tuple(spec.names or ()), spec.name)


# callables the reduced forms name (the writer process loads them: builtins and Shown)
_BUILTINS: tuple[type[Any], ...] = (tuple, list, dict, set, frozenset, str, bytes)
_CALLABLES = frozenset({Shown, complex, float, int, *_BUILTINS})
SHOWN_LIMIT = 200       # characters of a program's object's repr the journal keeps


class EventPickler(pickle.Pickler):
    """A pickler for the bus's deliveries; keeps the per-spec summaries between them."""

    def __init__(self) -> None:
        self._buf = io.BytesIO()
        super().__init__(self._buf, pickle.HIGHEST_PROTOCOL)
        self._specs: dict[int, tuple[SpecInfo, TaskSpec]] = {}

    def reducer_override(self, obj: Any) -> Any:
        """Called for each object of a non-builtin type only (not for numbers, strings,
        tuples, lists, dicts, sets: pickle saves those itself): its plain form."""
        t = type(obj)
        if t is Future:     # a file version: the user's path (the version's own is gone after)
            item = obj._item
            return tuple, ((obj._did, item.path if item is not None and item.path
                            else obj._upath or obj._path),)
        if t is TaskSpec:
            return self._reduce_spec(obj)
        if t is Snapshot:   # a large argument: its pickle, its futures and what it is
            blob, found = obj
            return tuple, ((blob, found, obj.what),)
        if t is complex or (t is type and obj in _CALLABLES):
            return NotImplemented           # saved as itself: the writer knows it
        if isinstance(obj, BaseException):
            return _reduce_error(obj)
        if isinstance(obj, float):          # a numpy float64, ...: the number
            return float, (float(obj),)
        if isinstance(obj, int):            # an IntEnum, ...
            return int, (int(obj),)
        for plain in _BUILTINS:             # a named tuple, an OrderedDict, ...: its content
            if isinstance(obj, plain):
                return plain, (plain(obj),)
        return Shown, (short(obj, SHOWN_LIMIT),)

    def _reduce_spec(self, spec: TaskSpec) -> tuple[Any, ...]:
        info = self._specs.get(id(spec))
        if info is None:
            info = self._specs[id(spec)] = (spec_info(spec), spec)   # (keeps id() valid)
        summary, _ = info
        return tuple, (summary,)

    def dumps(self, obj: Any) -> bytes:
        buf = self._buf
        buf.seek(0)
        buf.truncate()
        self.clear_memo()
        self.dump(obj)
        self.clear_memo()        # the memo would keep the whole batch alive until the next
        return buf.getvalue()


def _reduce_error(err: BaseException) -> tuple[Any, ...]:
    try:
        text = str(err)
    except Exception:  # noqa: BLE001 - a program's exception whose __str__ fails
        text = short(err, SHOWN_LIMIT)
    info: ErrorInfo = (text, getattr(err, "remote_traceback", "") or None,
                       error_exit_code(err))
    return tuple, (info,)
