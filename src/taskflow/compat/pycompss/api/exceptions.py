"""``pycompss.api.exceptions``: COMPSsException.

Raised in a task that belongs to a :class:`~.api.TaskGroup`, it is not
retried: the group's waiting and running tasks are cancelled (running
programs get SIGTERM) and it is raised, as this class, at the group's exit
or at ``compss_barrier_group``; the application goes on from there. It is
taskflow's :class:`~taskflow.errors.GroupAbort` under its PyCOMPSs name.
"""
from __future__ import annotations

from ....errors import GroupAbort


class COMPSsException(GroupAbort):  # noqa: N818 - PyCOMPSs's name
    """A task's deliberate exception that aborts its task group."""

    def __init__(self, message: str = "", target_direction: object = None) -> None:
        super().__init__(message)
        self.message = message
        self.target_direction = target_direction

    def __reduce__(self) -> tuple[type, tuple[str, object]]:
        return (type(self), (self.message, self.target_direction))


__all__ = ["COMPSsException"]
