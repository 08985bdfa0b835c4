"""How a batch of events travels to the journal's writer process: one pickle.

The events hold references, not copies: a ``submitted`` event carries the
task's :class:`~taskflow.graph.spec.TaskSpec` (with its function) and the
futures of its resolved arguments; a ``failed`` event carries the error.
Instead of rebuilding every event as plain tuples in Python (which cost the
master's GIL about a microsecond per task), the pickler's dispatch table
reduces those three kinds of objects as they are met:

- a TaskSpec becomes ``(function, constraints JSON, parameter names, task name)``,
  once per batch (pickle memoises it) and once per run (cached here);
- a Future becomes ``(data id, path)``, a file version's path being the user's;
- a taskflow error becomes ``(text, remote traceback, exit code)``.

Everything else in an event is already plain (numbers, strings, the call's
scalar arguments). The writer (:mod:`taskflow.journal.writer`) reads the
reduced forms.
"""
from __future__ import annotations

import copyreg
import io
import pickle
from typing import Any

from .. import errors
from ..graph.spec import TaskSpec
from ..future import Future
from .writer import _constraints, _exit_code


def _spec_info(spec: Any) -> tuple[str, str, tuple[str, ...], str]:
    f = getattr(spec, "func", None)
    return (f"{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', '?')}",
            _constraints(spec), tuple(getattr(spec, "names", ()) or ()),
            getattr(spec, "name", "?"))


class EventPickler(pickle.Pickler):
    """A pickler for event batches; keeps the per-spec summaries between batches."""

    def __init__(self) -> None:
        self._buf = io.BytesIO()
        super().__init__(self._buf, pickle.HIGHEST_PROTOCOL)
        self._specs: dict[int, tuple[tuple[str, str, tuple[str, ...], str], Any]] = {}
        table = copyreg.dispatch_table.copy()
        table[TaskSpec] = self._reduce_spec
        table[Future] = _reduce_future
        for obj in vars(errors).values():
            if isinstance(obj, type) and issubclass(obj, BaseException):
                table[obj] = _reduce_error
        self.dispatch_table = table

    def _reduce_spec(self, spec: Any) -> tuple[Any, ...]:
        info = self._specs.get(id(spec))
        if info is None:
            info = self._specs[id(spec)] = (_spec_info(spec), spec)   # (keeps id() valid)
        return tuple, (info[0],)

    def dumps(self, obj: Any) -> bytes:
        buf = self._buf
        buf.seek(0)
        buf.truncate()
        self.clear_memo()
        self.dump(obj)
        self.clear_memo()        # the memo would keep the whole batch alive until the next
        return buf.getvalue()


def _reduce_future(fut: Any) -> tuple[Any, ...]:
    # a file version: the user's path (the version's own path is gone after the run)
    item = fut._item
    return tuple, ((fut._did, item.path if item is not None and item.path else fut._path),)


def _reduce_error(err: Any) -> tuple[Any, ...]:
    return tuple, ((str(err), getattr(err, "remote_traceback", "") or None, _exit_code(err)),)
