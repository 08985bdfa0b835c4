"""``pycompss.api.implement``: ``@implement(source_class="module", method="task_name")``.

On top of an alternative implementation of a task (above its
``@constraint`` and ``@binary``/``@mpi``/... and ``@task``); calls of the
task run whichever implementation fits the nodes (taskflow.compat.calls.implement).
"""
from __future__ import annotations

from typing import Any

from ....errors import UsageError
from ...argwarn import unexpected
from ...calls.implement import register
from ...calls.taskfn import task_function


class implement:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, source_class: str | None = None, method: str | None = None,
                 **kwargs: Any) -> None:
        source_class = source_class or kwargs.pop("sourceClass", None)
        for key in kwargs:              # PyCOMPSs warns and goes on without it
            unexpected(key, "implement", ("source_class", "method"))
        if not source_class or not method:
            raise UsageError("@implement: source_class and method are both mandatory "
                             "(the module or class and the name of the task implemented).")
        self.source_class = source_class
        self.method = method

    def __call__(self, target: Any) -> Any:
        tf = task_function(target, "@implement")
        register(tf, self.source_class, self.method)
        return tf


Implement = implement
