"""Every error a user of taskflow can see, each naming what to do.

All of them derive from :class:`TaskflowError`, so ``except TaskflowError``
catches whatever taskflow raises on purpose; each keeps the standard base it
had before (``ValueError`` for usage errors, ``RuntimeError`` for node
start-up problems, ...), so code that caught those still works. Both sides
of the wire import this module: it depends on nothing else of taskflow.
"""
from __future__ import annotations

from typing import Any


class TaskflowError(Exception):
    """Base class of taskflow's own errors."""


class UsageError(TaskflowError, ValueError):
    """A task was declared or called wrongly; raised where the call happens."""


class ParameterError(UsageError):
    """A parameter declaration that does not make sense."""


class TaskError(TaskflowError):
    """A task failed; raised in the main program where its value is needed.

    ``task_name``, ``task_id``, ``node`` and ``remote_traceback`` tell where
    and why; ``__cause__`` is the original exception when it could be
    rebuilt in the main program. A pickled error comes back as its own class
    (:class:`TaskTimeout` stays a :class:`TaskTimeout`).
    """

    def __init__(self, message: str, *, task_name: str = "", task_id: int = 0,
                 node: str = "", remote_traceback: str = "", kind: str = "error") -> None:
        super().__init__(message)
        self.task_name = task_name
        self.task_id = task_id
        self.node = node
        self.remote_traceback = remote_traceback
        self.kind = kind
        self._reported = True      # the runtime clears it for failures the run must report

    @property
    def reported(self) -> bool:
        """The program has seen this error, or it fails no run (a cancellation)."""
        return self._reported

    def report_at_end(self) -> None:
        """This error fails the run: the run's end reports it, unless the program sees it
        first (:meth:`seen`)."""
        self._reported = False

    def seen(self) -> None:
        """The program has seen this error (raised in it, or reported): not reported again."""
        self._reported = True

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (_rebuild_task_error, (type(self), self.args[0], self.task_name, self.task_id,
                                      self.node, self.remote_traceback, self.kind))


def _rebuild_task_error(cls: type[TaskError], msg: str, name: str, tid: int, node: str,
                        tb: str, kind: str) -> TaskError:
    return cls(msg, task_name=name, task_id=tid, node=node, remote_traceback=tb, kind=kind)


class TaskTimeout(TaskError):
    """A task ran longer than its ``time_out``."""


class TaskMemoryExceeded(TaskError):
    """A task grew past its memory limit (``@constraint(memory_size=..., memory_limit=True)``
    or ``Runtime(memory_limit=True)``). ``limit`` and ``peak`` are in bytes; the limit is
    enforced with RLIMIT_AS on the executor's address space while the task runs."""

    limit = 0
    peak = 0

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (_rebuild_memory_error, (self.args[0], self.task_name, self.task_id, self.node,
                                        self.remote_traceback, self.limit, self.peak))


def _rebuild_memory_error(msg: str, name: str, tid: int, node: str, tb: str, limit: int,
                          peak: int) -> TaskMemoryExceeded:
    err = TaskMemoryExceeded(msg, task_name=name, task_id=tid, node=node, remote_traceback=tb,
                             kind="memory")
    err.limit, err.peak = limit, peak
    return err


class TaskCancelled(TaskError):
    """A task did not run because a task it depends on failed."""


class GroupAbort(TaskflowError):
    """Raised *in a task* of a :class:`~taskflow.TaskGroup` to abort the group.

    The task is not retried; the group's waiting and running tasks are
    cancelled (their values raise :class:`TaskCancelled`; running programs
    get SIGTERM); the exception itself is raised in the main program, as
    its own class, when the group is left or ``barrier_group`` is called.
    Raised outside any group it is an ordinary failure, never retried.
    (PyCOMPSs's ``COMPSsException`` is this class under its own name.)
    """


class NodeLost(TaskflowError):
    """A node's connection dropped or its agent died."""


class RuntimeNotStarted(TaskflowError):
    """An operation needs a runtime and none is running."""


class ProtocolError(TaskflowError, RuntimeError):
    """The byte stream did not carry a valid frame (peer crashed or garbage)."""


class NodeStartError(TaskflowError, RuntimeError):
    """A node agent could not be started; the message says where and why."""


class VersionMismatch(NodeStartError):
    """The node's taskflow is not the master's (frames change between versions)."""


class HostKeyError(NodeStartError):
    """The host's key is unknown or differs from known_hosts."""


class SlurmError(NodeStartError):
    """sbatch / squeue failed; the message carries Slurm's own words."""


class ClusterConfigError(UsageError):
    """The cluster file is wrong; the message names the file, line and key."""


class RunNotFound(TaskflowError, LookupError):
    """No run matches what the user asked for."""


class RecordFailed(TaskflowError, RuntimeError):
    """The run's record (its journal or its resume log) could not be written: a full
    disk, a journal locked by another process past the wait, a damaged file. The run
    starts no more tasks, keeps what it has and fails; the message names the file and why."""


class RecordDamaged(TaskflowError, ValueError):
    """A run's journal or resume log cannot be read (damaged, or not one); the message
    names the file and what else the run kept."""


class ProgramFailed(TaskflowError, RuntimeError):
    """An external program exited with a non-zero code (``fail_by_exit_value=True``)."""

    def __init__(self, message: str, returncode: int = 0, argv: list[str] | None = None,
                 logs: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.argv = argv or []
        self.log_paths = logs


class ContainerUnavailable(TaskflowError, RuntimeError):
    """A task's container engine or image is missing or unusable on the node that got it.

    Raised on the node before the task runs (checked once per node and image);
    the message names the node, the engine, the image and the fix.
    """
