"""A task's value pickled for the trip back, when plain pickle cannot (cloudpickle).

cloudpickle pickles an open text file as a ``StringIO`` holding the rest of
its text: a task that returned ``open(path)`` would give the caller another
kind of object, detached from the file, without a word. Here an open file
anywhere in a task's value is the task's error instead, naming the task,
which of its values held it and what to do (return the path, or declare the
file a ``FILE_OUT`` parameter). PyCOMPSs has no such behaviour to keep: its
documented way to hand a file on is a file parameter.
"""
from __future__ import annotations

import functools
import io
from collections import ChainMap
from typing import Any

from ...wire import messages as M
from ...wire import protocol as P
from ...wire import values as V


class OpenFileReturned(TypeError):
    """An open file met while pickling a task's value."""

    def __init__(self, f: Any) -> None:
        super().__init__(f"an open file ({f!r})")
        self.file = f


def _refuse(f: Any) -> Any:
    std = V.std_stream(f)               # the caller's own stream in its place
    if std is not None:
        return std
    raise OpenFileReturned(f)


@functools.cache
def _pickler() -> Any:
    """cloudpickle's pickler, refusing open files: made when a value first needs it (the
    agent, which imports this module, never does)."""
    import cloudpickle

    class _Pickler(cloudpickle.Pickler):  # type: ignore[misc]  # (cloudpickle has no types)
        dispatch_table = ChainMap({io.TextIOWrapper: _refuse}, cloudpickle.Pickler.dispatch_table)

    return _Pickler


def _cloudpickle(value: Any) -> bytes:
    with io.BytesIO() as buf:
        _pickler()(buf, protocol=P.PROTOCOL).dump(value)
        return buf.getvalue()


def dumps(value: Any, name: str, what: str = "its return value") -> M.Payload:
    """``value`` pickled (large buffers out of band: wire.values); ``name``: the task's,
    ``what``: which of its values this is, for the error."""
    try:
        return V.dump(value)
    except Exception:
        pass
    try:
        return _cloudpickle(value)
    except OpenFileReturned as exc:
        raise TypeError(_open_file(name, what, exc.file)) from None
    except Exception as exc:
        if isinstance(value, io.IOBase):
            raise TypeError(_open_file(name, what, value)) from None
        if "'_io." in str(exc):             # a binary file inside the value
            raise TypeError(_open_file(name, what, None)) from None
        raise TypeError(f"task {name} produced a value of type {type(value).__name__} "
                        f"that cannot be pickled ({what}: {exc}); {_fix_of(value)}") from exc


def _fix_of(value: Any) -> str:
    """What to return instead of a value that cannot travel."""
    if hasattr(value, "__next__") and hasattr(value, "__iter__"):     # a generator, an iterator
        return ("return a list instead (return list(...)): an iterator's items are made "
                "lazily, where it runs, and cannot travel")
    return ("return plain data (numbers, strings, lists, dicts, arrays, instances of your "
            "classes), or write the result to a file declared FILE_OUT; make what holds a "
            "lock, a socket or a connection inside the task that uses it")


def _open_file(name: str, what: str, f: Any) -> str:
    path = getattr(f, "name", None)
    path_text = f" ({path!r})" if isinstance(path, str) else ""
    return (f"task {name}: {what} holds an open file{path_text}, which cannot go back to the "
            f"caller (only a copy of its text could, detached from the file); return the "
            f"path instead (and open it where it is read), or declare the file a parameter "
            f"with FILE_OUT and write it in the task")
