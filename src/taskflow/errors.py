"""Errors a user of taskflow can see, each naming what to do."""
from __future__ import annotations


class TaskflowError(Exception):
    """Base class of taskflow's own errors."""


class UsageError(TaskflowError, ValueError):
    """A task was declared or called wrongly; raised where the call happens."""


class TaskError(TaskflowError):
    """A task failed; raised in the main program where its value is needed.

    ``task_name``, ``task_id``, ``node`` and ``remote_traceback`` tell where
    and why; ``__cause__`` is the original exception when it could be
    rebuilt in the main program.
    """

    def __init__(self, message: str, *, task_name: str = "", task_id: int = 0,
                 node: str = "", remote_traceback: str = "", kind: str = "error") -> None:
        super().__init__(message)
        self.task_name = task_name
        self.task_id = task_id
        self.node = node
        self.remote_traceback = remote_traceback
        self.kind = kind

    def __reduce__(self):
        return (_rebuild_task_error, (self.args[0], self.task_name, self.task_id,
                                      self.node, self.remote_traceback, self.kind))


def _rebuild_task_error(msg, name, tid, node, tb, kind):
    return TaskError(msg, task_name=name, task_id=tid, node=node, remote_traceback=tb, kind=kind)


class TaskTimeout(TaskError):
    """A task ran longer than its ``time_out``."""


class TaskCancelled(TaskError):
    """A task did not run because a task it depends on failed."""


class NodeLost(TaskflowError):
    """A node's connection dropped or its agent died."""


class RuntimeNotStarted(TaskflowError):
    """An operation needs a runtime and none is running."""
