"""Streams between running tasks: the handles a program makes and tasks receive.

A :class:`Stream` carries objects, a :class:`FileStream` the files written into
a directory. A handle is only a name (its id, its alias, its directory): given
to a task as ``STREAM_OUT`` (it publishes) or ``STREAM_IN`` (it polls) it
travels as that name, and every operation goes to the master, which keeps the
stream (:mod:`taskflow.runtime.streams`). The process's *client* carries the
operation there: in a task, its executor's (:mod:`taskflow.agent.executor.streams`,
over the node's wire: ``StreamPublish`` / ``StreamClose`` / ``StreamPoll``
messages); in the main program, the runtime's. Both sides import this module.

Delivery: every item goes to exactly one poll of each *consumer group*; the
tasks polling a stream share one group (``"default"``) unless they poll with
``group=`` (then each named group sees every item once), in the order each
producer published. See docs/guide/streams.md.
"""
from __future__ import annotations

import os
import pickle
from typing import Any, Iterable, Protocol

from ..context import streams as _client
from ..errors import TaskflowError, UsageError

DEFAULT_GROUP = "default"
SYNC_GROUP = ""        # a producer task's sync: a poll that takes nothing, in no group
OBJECTS = "objects"
FILES = "files"


class StreamClosed(UsageError):
    """A stream was used after its close: publishing to it, or polling again once
    ``is_closed()`` said it was closed and the last poll took what was left.

    Example::

        from taskflow import Stream, StreamClosed

        s = Stream()
        s.publish(1)
        s.close()
        try:
            s.publish(2)
        except StreamClosed as err:
            print(err)                                # ... publish after close() ...
    """


class StreamFailed(TaskflowError):
    """The stream was closed with an error (its producer failed): consumers see it once
    they took every item published before.

    Example::

        from taskflow import STREAM_IN, STREAM_OUT, Stream, StreamFailed, task, wait_on

        @task(s=STREAM_OUT)
        def produce(s: Stream) -> None:
            s.publish(1)
            raise OSError("disk full")

        @task(returns=int, s=STREAM_IN)
        def consume(s: Stream) -> int:
            n = 0
            try:
                while not s.is_closed():
                    n += len(s.poll(timeout=1.0))
            except StreamFailed:                      # names the producer and its error
                pass
            return n

        s = Stream()
        n = consume(s)
        producer = produce(s)
        print(wait_on(n))                             # 1: the item published before the failure
        try:
            wait_on(producer)
        except OSError as err:
            print(err.task_name)                      # produce
    """


class Client(Protocol):
    """What carries a stream's operations to the master (one per process)."""

    def publish(self, stream: Stream, items: list[bytes]) -> None: ...

    def close(self, stream: Stream) -> None: ...

    def poll(self, stream: Stream, group: str, timeout: float | None,
             take: bool) -> tuple[list[bytes], bool, bytes | None]:
        """(items, closed and drained for the group, the error it was closed with)."""


def dumps(obj: Any) -> bytes:
    """An item as it travels (cloudpickle: a class of the main script travels too)."""
    import cloudpickle
    blob: bytes = cloudpickle.dumps(obj, protocol=5)
    return blob


class Stream:
    """A stream of objects: ``publish`` in a producer, ``poll`` in consumers.

    ``alias`` names the stream: two handles with the same alias are the same
    stream (PyCOMPSs's ``alias``); without one each handle is a new stream. The
    main program's handle without an alias is numbered by its run when the run
    first uses it (``objects#3``: the run's third), so that a resumed run finds
    the same stream (:meth:`numbered`); one a task makes keeps a random id.

    Example::

        from taskflow import STREAM_IN, STREAM_OUT, Stream, task, wait_on

        @task(s=STREAM_OUT)
        def produce(s: Stream, n: int) -> None:
            for i in range(n):
                s.publish(i)                              # consumers see it at once
            s.close()

        @task(returns=int, s=STREAM_IN)
        def consume(s: Stream) -> int:
            total = 0
            while not s.is_closed():
                total += sum(s.poll(timeout=1.0))
            return total

        numbers = Stream()
        total = consume(numbers)
        produce(numbers, 5)
        print(wait_on(total))                             # 10
    """

    kind = OBJECTS
    __slots__ = ("id", "alias", "param", "_closed_here", "_drained", "_final", "_error",
                 "_more", "_fresh")

    def __init__(self, alias: str | None = None) -> None:
        if alias is not None and (not isinstance(alias, str) or not alias):
            raise UsageError(f"Stream(alias={alias!r}): an alias is a non-empty string")
        self.id = f"{self.kind}:{alias}" if alias else os.urandom(16).hex()
        self.alias = alias
        self.param = ""                 # the parameter a task got it as (errors name it)
        self._local()
        # (numbered: see numbered) True: not yet; then the run that numbered it
        self._fresh: object = alias is None and self.kind == OBJECTS

    def numbered(self, n: int, run: object) -> bool:
        """The run ``run`` uses this handle for the first time, and it is its ``n``-th
        stream made here without an alias: it becomes ``objects#n`` (True); a handle that
        came from elsewhere (a task's, unpickled), has a name, or was numbered by this run
        already keeps its id (False). (One numbered by an earlier run in this process is
        numbered again: its number there may be another stream's here.)"""
        fresh = getattr(self, "_fresh", False)
        if fresh is False or fresh is run:
            return False
        self._fresh = run
        self.id = f"{OBJECTS}#{n}"
        return True

    def bound(self, param: str) -> Stream:
        """This stream as a task's parameter ``param`` gets it (graph.builder)."""
        s = _rebuild(type(self), self._fields())
        s.param = param
        return s

    def _local(self) -> None:
        self._closed_here = False       # close() was called through this handle
        self._drained = False           # a poll or is_closed() saw it closed, nothing left
        self._final = False             # ... and one poll since (PyCOMPSs's last poll)
        self._error: bytes | None = None    # ... with this error: raised from then on
        self._more = False              # the last poll took items: the stream was open then

    @property
    def name(self) -> str:
        if self.alias:
            return self.alias
        if self.id.startswith(OBJECTS + "#"):
            return f"{type(self).__name__}#{self.id[len(OBJECTS) + 1:]}"
        return f"{type(self).__name__}#{self.id[:8]}"

    @property
    def where(self) -> str:
        """The stream, and the parameter it came as in a task (for errors)."""
        return f"{self.name} (parameter '{self.param}')" if self.param else self.name

    def __reduce__(self) -> tuple[Any, ...]:
        if self.param:
            return (_rebuild, (type(self), self._fields(), self.param))
        return (_rebuild, (type(self), self._fields()))

    def _fields(self) -> tuple[Any, ...]:
        return (self.id, self.alias)

    def _set(self, fields: tuple[Any, ...]) -> None:
        self.id, self.alias = fields
        self._local()
        self._fresh = False

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"<taskflow {type(self).__name__} {self.name}>"

    # -- producing -------------------------------------------------------------------
    def publish(self, obj: object) -> None:
        """Add one item (objects: any picklable value)."""
        self._publish([obj])

    def publish_list(self, objs: Iterable[object]) -> None:
        """Add several items, in their order."""
        self._publish(list(objs))

    def _publish(self, objs: list[Any]) -> None:
        if self._closed_here:
            raise StreamClosed(f"{self.where}: publish after close(): this producer closed "
                               f"the stream; publish everything before calling close()")
        if objs:
            _need(self, "publish").publish(self, [dumps(o) for o in objs])

    def close(self) -> None:
        """This producer is done: the stream closes once every producer closed (a
        producer task that ends closes its part by itself)."""
        if not self._closed_here:
            self._closed_here = True
            _need(self, "close").close(self)

    # -- consuming -------------------------------------------------------------------
    def poll(self, timeout: float | None = None, group: str = DEFAULT_GROUP) -> list[Any]:
        """The items not yet taken by ``group``: waits up to ``timeout`` seconds (None:
        until there is one or the stream closes) and returns them, maybe none.

        On a closed stream it returns what is left, then ``[]`` once; polling again
        after ``is_closed()`` said True and that last poll is a :class:`StreamClosed`.
        A stream closed with an error raises it (:class:`StreamFailed`) once its items
        are taken.
        """
        if timeout is not None and (not isinstance(timeout, (int, float)) or timeout < 0):
            raise UsageError(f"{self.where}: poll(timeout={timeout!r}): a timeout is a number "
                             f"of seconds >= 0, or None to wait for an item")
        if self._error is not None:
            raise _error(self._error)
        if self._drained:
            if self._final:
                raise StreamClosed(
                    f"{self.where}: polled again after it was closed and the last poll took "
                    f"what was left; stop polling once is_closed() returns True")
            self._final = True
        items, done, error = _need(self, "poll").poll(self, _group(group), timeout, True)
        self._more = bool(items) and not done
        if done:
            self._drained = True
            self._error = error
        if error is not None and done and not items:
            raise _error(error)
        return [self._item(b) for b in items]

    def is_closed(self, group: str = DEFAULT_GROUP) -> bool:
        """Whether the stream is closed *and* this consumer group took every item: a
        loop ``while not s.is_closed(): s.poll()`` sees every item. Raises the error a
        stream was closed with (:class:`StreamFailed`), once its items are taken.

        Right after a poll that took items (the stream was open then) it answers False
        without asking the master: the next poll says (one round trip per loop, not two).
        """
        if self._error is not None:
            raise _error(self._error)
        if self._drained:
            return True
        if self._more:
            self._more = False
            return False
        _, done, error = _need(self, "is_closed").poll(self, _group(group), 0.0, False)
        if done:
            self._drained = True
            self._error = error
            if error is not None:
                raise _error(error)
        return done

    def _item(self, blob: bytes) -> Any:
        return pickle.loads(blob)


class FileStream(Stream):
    """A stream of files: producers write files into ``base_dir`` (a task by its own
    code, or a program by ``@binary`` given the stream: it gets the directory's path);
    ``poll`` returns the paths of the files not yet taken by the group.

    The directory must be visible at the same path from the master and the consumers'
    nodes (a shared filesystem, as PyCOMPSs requires): the master lists it. A file is
    handed out once its size and time stopped changing between two listings, or its
    stream closed.

    Example::

        import os
        from taskflow import STREAM_IN, STREAM_OUT, FileStream, task, wait_on

        @task(fs=STREAM_OUT)
        def write(fs: FileStream, n: int) -> None:
            for i in range(n):
                path = os.path.join(fs.base_dir, f"part-{i}.txt")
                with open(path, "w") as f:
                    f.write(str(i))
                fs.publish(path)                          # (else found by listing)

        @task(returns=int, fs=STREAM_IN)
        def count(fs: FileStream) -> int:
            n = 0
            while not fs.is_closed():
                n += len(fs.poll(timeout=1.0))            # paths, oldest first
            return n

        parts = FileStream("parts/")
        n = count(parts)
        write(parts, 3)
        print(wait_on(n))                                 # 3
    """

    kind = FILES
    __slots__ = ("base_dir",)

    def __init__(self, base_dir: str | os.PathLike[str], alias: str | None = None) -> None:
        path = os.path.abspath(os.fspath(base_dir))
        self.base_dir = path
        super().__init__(alias)
        if alias is None:
            self.id = f"{FILES}:{path}"     # the same directory: the same stream
        os.makedirs(path, exist_ok=True)

    def _fields(self) -> tuple[Any, ...]:
        return (self.id, self.alias, self.base_dir)

    def _set(self, fields: tuple[Any, ...]) -> None:
        self.id, self.alias, self.base_dir = fields
        self._local()
        self._fresh = False

    @property
    def name(self) -> str:
        return self.alias or self.base_dir

    def __fspath__(self) -> str:
        return self.base_dir

    def __str__(self) -> str:            # (a @binary's argument: the directory)
        return self.base_dir

    def publish(self, obj: str | os.PathLike[str]) -> None:  # type: ignore[override]
        """Announce a file written into the directory (else it is found by listing)."""
        self._publish([_inside(self, obj)])

    def publish_list(self, objs: Iterable[str | os.PathLike[str]]) -> None:  # type: ignore[override]
        """Announce several files written into the directory."""
        self._publish([_inside(self, o) for o in objs])

    def _item(self, blob: bytes) -> Any:
        path: str = pickle.loads(blob)
        return path


def _inside(fs: FileStream, path: Any) -> str:
    full = os.path.abspath(os.path.join(fs.base_dir, os.fspath(path)))
    if os.path.dirname(full) != fs.base_dir:
        raise UsageError(f"{fs.name}: {path!r} is not a file directly in the stream's "
                         f"directory {fs.base_dir}; write it there, then publish its name")
    return full


def _rebuild(cls: type[Stream], fields: tuple[Any, ...], param: str = "") -> Stream:
    s = cls.__new__(cls)
    s._set(fields)
    s.param = param
    return s


def _group(group: Any) -> str:
    if not isinstance(group, str) or not group:
        raise UsageError(f"poll(group={group!r}): a consumer group is a non-empty string")
    return group


def _need(s: Stream, what: str) -> Client:
    c: Client | None = _client()
    if c is None:
        raise UsageError(f"{s.where}: {what}() with no run here; use a stream in the main program "
                         f"while a taskflow runtime runs, or in a task that got it as "
                         f"STREAM_IN / STREAM_OUT")
    return c


def _error(blob: bytes) -> BaseException:
    try:
        exc = pickle.loads(blob)
    except Exception as why:  # noqa: BLE001 - an error class this process cannot import
        return StreamFailed(f"the stream was closed with an error that cannot be read "
                            f"here: {why}")
    return exc if isinstance(exc, BaseException) else StreamFailed(str(exc))


def is_stream(value: Any) -> bool:
    return isinstance(value, Stream)
