"""``pycompss.api.prolog``: ``@prolog(binary=..., args=..., fail_by_exit_value=True)``.

A program run on the node before the task (any kind of task), in its
working directory; ``{{name}}`` in ``args`` is the task's parameter. By
default a failing prolog fails the task before it starts.
"""
from __future__ import annotations

from typing import Any

from ...hooks import add_hook


class prolog:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.kwargs = kwargs

    def __call__(self, target: Any) -> Any:
        return add_hook(target, "prolog", self.kwargs, fail_default=True)


Prolog = prolog
