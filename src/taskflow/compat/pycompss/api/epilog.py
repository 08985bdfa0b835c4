"""``pycompss.api.epilog``: ``@epilog(binary=..., args=..., fail_by_exit_value=False)``.

A program run on the node after the task; by default its failure is only
logged (``fail_by_exit_value=True`` makes it fail the task).
"""
from __future__ import annotations

from typing import Any

from ...hooks import add_hook


class epilog:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.kwargs = kwargs

    def __call__(self, target: Any) -> Any:
        return add_hook(target, "epilog", self.kwargs, fail_default=False)


Epilog = epilog
