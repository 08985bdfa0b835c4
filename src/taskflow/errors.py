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
    """Base class of taskflow's own errors.

    Example::

        from taskflow import TaskflowError, task, wait_on

        @task(returns=int)
        def parse(text: str) -> int:
            return int(text)

        try:
            wait_on(parse("x"))
        except TaskflowError as err:                  # whatever taskflow raises on purpose
            print(err.task_name)                      # parse
    """


class UsageError(TaskflowError, ValueError):
    """A task was declared or called wrongly; raised where the call happens.

    Example::

        from taskflow import UsageError, task

        try:
            @task(retruns=int)
            def f(x: int) -> int:
                return x
        except UsageError as err:
            print(err)                                # ... Did you mean returns? ...
    """


class ParameterError(UsageError):
    """A parameter declaration that does not make sense."""


class TaskError(TaskflowError):
    """A task failed; raised in the main program where its value is needed.

    ``task_name``, ``task_id``, ``node`` and ``remote_traceback`` tell where
    and why; ``__cause__`` is the original exception when it could be
    rebuilt in the main program. A pickled error comes back as its own class
    (:class:`TaskTimeout` stays a :class:`TaskTimeout`). Where the task's exception class
    can be subclassed, the error is also an instance of it (``TaskError(ZeroDivisionError)``).

    Example::

        from taskflow import TaskError, task, wait_on

        @task(returns=float)
        def inverse(x: float) -> float:
            return 1 / x

        try:
            wait_on(inverse(0))
        except ZeroDivisionError as err:              # the task's own exception class ...
            assert isinstance(err, TaskError)         # ... and a TaskError
            print(err.task_name, err.node)            # which task, on which node
            print(err.remote_traceback)               # its frames, where it ran
    """

    handled = False     # the program met this error (it was raised in it, or read)
    root: BaseException | None = None   # a cancellation's: the failure that caused it

    def __init__(self, message: str, *, task_name: str = "", task_id: int = 0,
                 node: str = "", remote_traceback: str = "", kind: str = "error") -> None:
        super().__init__(message)
        self._fields(task_name, task_id, node, remote_traceback, kind)

    def _fields(self, task_name: str, task_id: int, node: str, remote_traceback: str,
                kind: str) -> None:
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

    def met(self) -> None:
        """The program met this error: ``wait_on`` or ``result()`` raised it there, or
        ``exception()`` gave it. A failure the program met is its to handle: it fails the
        run only if the program then ends badly (the error uncaught ends it so). A
        cancellation's root failure is handled with it (a barrier still raises it once)."""
        self._reported = True
        self.handled = True
        root = self.root
        if isinstance(root, TaskError):
            root.handled = True

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (_rebuild_task_error, (type(self), self.args[0], self.task_name, self.task_id,
                                      self.node, self.remote_traceback, self.kind))


def _rebuild_task_error(cls: type[TaskError], msg: str, name: str, tid: int, node: str,
                        tb: str, kind: str) -> TaskError:
    return cls(msg, task_name=name, task_id=tid, node=node, remote_traceback=tb, kind=kind)


# -- errors that are also the task's own exception -----------------------------------
# ``except ZeroDivisionError`` catches a task's ZeroDivisionError, as with
# concurrent.futures, Dask and Parsl, and ``except TaskError`` still catches every task
# failure: the error raised is an instance of a class made of both,
# ``TaskError(ZeroDivisionError)`` (Ray does the same). Where the task's class cannot be
# combined so (its layout, a __new__ of its own, a final class), the error is a plain
# TaskError with the original as ``__cause__``.
_DUAL: dict[tuple[type, type], type[TaskError] | None] = {}
_OS_FIELDS = ("errno", "strerror", "filename", "filename2")


def with_cause(base: type[TaskError], message: str, cause: BaseException | None,
               **fields: Any) -> TaskError:
    """A ``base`` error (a TaskError class) for a task that raised ``cause``: an instance of
    ``cause``'s class too where it can be (see above), with ``cause`` as ``__cause__`` and
    its attributes (``e.errno``, a user's own fields) readable on it."""
    err: TaskError | None = None
    if cause is not None:
        cls = _dual_class(base, type(cause))
        if cls is not None:
            try:
                err = _make_dual(cls, message, cause, fields)
            except Exception:  # noqa: BLE001 - a class that cannot be made so: plain error
                err = None
    if err is None:
        err = base(message, **fields)
    err.__cause__ = cause
    return err


def taskflow_class(err: TaskError) -> type[TaskError]:
    """``TaskError`` for a ``TaskError(ZeroDivisionError)``: the error's taskflow class."""
    return next(c for c in type(err).__mro__ if c.__module__ == __name__ and
                c.__name__.isidentifier() and issubclass(c, TaskError))


def _make_dual(cls: type[TaskError], message: str, cause: BaseException,
               fields: dict[str, Any]) -> TaskError:
    err: TaskError = cls.__new__(cls, message)      # (not the task class's __init__)
    BaseException.__init__(err, message)
    err._fields(fields.get("task_name", ""), fields.get("task_id", 0), fields.get("node", ""),
                fields.get("remote_traceback", ""), fields.get("kind", "error"))
    _copy_state(err, cause)
    err.__dict__["_message"] = message
    err.args = cause.args       # as the task's exception had them (e.args[0] of a KeyError
    return err                  # is the key); str() is taskflow's message (_dual_str)


def _dual_class(base: type[TaskError], orig: type[BaseException]) -> type[TaskError] | None:
    key = (base, orig)
    if key in _DUAL:
        return _DUAL[key]
    cls: type[TaskError] | None = None
    # taskflow's own errors stay themselves; KeyboardInterrupt & co are not a task's failure
    if issubclass(orig, Exception) and not issubclass(orig, TaskflowError):
        try:
            cls = type(f"{base.__name__}({orig.__name__})", (base, orig),
                       {"__module__": base.__module__, "__str__": _dual_str,
                        "__reduce__": _dual_reduce, "__doc__": base.__doc__})
        except TypeError:       # layouts that do not combine, final classes
            cls = None
    _DUAL[key] = cls
    return cls


def _copy_state(err: BaseException, cause: BaseException) -> None:
    if isinstance(cause, OSError):
        for name in _OS_FIELDS:
            setattr(err, name, getattr(cause, name))
    state = getattr(cause, "__dict__", None)
    if state:
        own = err.__dict__
        for k, v in state.items():
            own.setdefault(k, v)        # taskflow's fields (task_name, node, ...) stay


def _dual_str(self: BaseException) -> str:
    return str(getattr(self, "_message", ""))


def _dual_reduce(self: TaskError) -> tuple[Any, tuple[Any, ...]]:
    base = taskflow_class(self)
    return (_rebuild_dual, (base, _dual_str(self), self.__cause__,
                            self.task_name, self.task_id, self.node, self.remote_traceback,
                            self.kind))


def _rebuild_dual(base: type[TaskError], msg: str, cause: BaseException | None, name: str,
                  tid: int, node: str, tb: str, kind: str) -> TaskError:
    return with_cause(base, msg, cause, task_name=name, task_id=tid, node=node,
                      remote_traceback=tb, kind=kind)


class TaskTimeout(TaskError):
    """A task ran longer than its ``time_out``; the message names it and the fix.

    Example::

        import time
        from taskflow import TaskTimeout, task, wait_on

        @task(returns=int, time_out=1)
        def slow() -> int:
            time.sleep(30)
            return 0

        try:
            wait_on(slow())
        except TaskTimeout as err:
            print(err)                                # ... ran longer than time_out=1 s ...
    """


class TaskMemoryExceeded(TaskError):
    """A task grew past its memory limit (``@constraint(memory_size=..., memory_limit=True)``
    or ``Runtime(memory_limit=True)``). ``limit`` and ``peak`` are in bytes; the limit is
    enforced with RLIMIT_AS on the executor's address space while the task runs.

    Example::

        from taskflow import TaskMemoryExceeded, constraint, task, wait_on

        @constraint(memory_size=1, memory_limit=True)
        @task(returns=int)
        def grow() -> int:
            return len(bytearray(3 * 2**30))          # 3 GiB, past its 1 GB

        try:
            wait_on(grow())
        except TaskMemoryExceeded as err:
            print(err.limit)                          # 1073741824: 1 GiB, in bytes
    """

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
    """A task did not run because a task it depends on failed.

    Example::

        from taskflow import TaskCancelled, task, wait_on

        @task(returns=float)
        def inverse(x: float) -> float:
            return 1 / x

        @task(returns=float)
        def double(x: float) -> float:
            return 2 * x

        try:
            wait_on(double(inverse(0)))               # inverse fails: double never runs
        except TaskCancelled as err:
            print(err.task_name)                      # double
    """


class GroupAbort(TaskflowError):
    """Raised *in a task* of a :class:`~taskflow.TaskGroup` to abort the group.

    The task is not retried; the group's waiting and running tasks are
    cancelled (their values raise :class:`TaskCancelled`; running programs
    get SIGTERM); the exception itself is raised in the main program, as
    its own class, when the group is left or ``barrier_group`` is called.
    Raised outside any group it is an ordinary failure, never retried.
    (PyCOMPSs's ``COMPSsException`` is this class under its own name.)

    Example::

        from taskflow import GroupAbort, TaskGroup, task

        @task(returns=int)
        def check(x: int) -> int:
            if x < 0:
                raise GroupAbort(f"{x} is negative: stop the group")
            return x

        try:
            with TaskGroup("checks"):
                for x in (1, -1, 2):
                    check(x)
        except GroupAbort as err:
            print(err)                                # -1 is negative: stop the group
    """


class NodeLost(TaskflowError):
    """A node's connection dropped or its agent died.

    Its tasks run again elsewhere; a stream whose producer task ran there is closed with
    this error, which its consumers see once they took the items kept (every node lost:
    each unfinished task fails with a :class:`TaskError` that says so).

    Example::

        from taskflow import STREAM_IN, NodeLost, Stream, task

        @task(returns=int, s=STREAM_IN)
        def consume(s: Stream) -> int:
            n = 0
            try:
                while not s.is_closed():
                    n += len(s.poll(timeout=1.0))
            except NodeLost:                          # the producer's node was lost
                pass                                  # n counts what it had published
            return n
    """


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
    """An external program exited with a non-zero code (``fail_by_exit_value=True``).

    Example::

        from taskflow import ProgramFailed, TaskError, binary, task, wait_on

        @binary(binary="false")
        @task(returns=int)
        def fails() -> int: ...

        try:
            wait_on(fails())
        except TaskError as err:
            cause = err.__cause__
            assert isinstance(cause, ProgramFailed)
            print(cause.returncode, cause.argv)       # 1 ['/usr/bin/false']
    """

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
