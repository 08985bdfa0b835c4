"""``pycompss.api.IO``: ``@IO()`` marks an I/O task.

COMPSs schedules I/O tasks outside the computing units so they overlap with
computation. In taskflow an I/O task runs like any other task (it takes a
slot); the mark is accepted and recorded in the journal.
"""
from __future__ import annotations

from typing import Any

from ...taskfn import task_function


class IO:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.kwargs = kwargs

    def __call__(self, target: Any) -> Any:
        tf = task_function(target, "@IO")
        tf.spec.record_hints(io=True)
        return tf


io = IO
