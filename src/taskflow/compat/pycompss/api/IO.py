"""``pycompss.api.IO``: ``@IO()`` marks an I/O task.

As in COMPSs, an I/O task holds no computing unit: with ``runcompss
--io_executors=N`` it runs on one of the N I/O executors of a node, so it
overlaps the computing tasks (an ``@IO`` ``@mpi`` task's ranks are I/O
executors too). Without I/O executors (the default, 0) it takes a slot like
any other task, and it is recorded as an I/O task in the journal.
"""
from __future__ import annotations

from typing import Any

from ...argwarn import unexpected
from ...calls.taskfn import task_function


class IO:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        for key in kwargs:              # @IO takes no argument: PyCOMPSs warns
            unexpected(key, "IO")

    def __call__(self, target: Any) -> Any:
        tf = task_function(target, "@IO")
        tf.spec.record_hints(io=True)
        tf.decl.io = True
        return tf


io = IO
