"""Where the main program waits: wait_on, barrier, files, groups.

These are the PyCOMPSs verbs without the ``compss_`` prefix.
"""
from __future__ import annotations

import builtins
import os
import shutil
from typing import IO, TYPE_CHECKING, Any

from ..context import in_worker, nest
from ..errors import UsageError
from ..future import _NOVALUE, Future
from ..graph import task as T
from ..graph.registry import materialize
from ..runtime import current, embedded
from ..wire.writes import update_in_place

if TYPE_CHECKING:
    from ..errors import TaskError
    from ..future import FutureHost
    from ..graph.registry import Registry


def _rt() -> Any:
    return current.get()


_PLAIN = frozenset({int, float, str, bool, type(None), bytes})


def _collect(obj: Any, registry: Registry, futs: list[Future], depth: int = 0) -> None:
    if depth > 100:
        return
    t = type(obj)
    if t is Future:
        item = registry.object_item(obj)
        futs.append(item.latest if item is not None and item.obj is obj else obj)
        return
    item = registry.object_item(obj) if registry.objects else None
    if item is not None and item.obj is obj:
        futs.append(item.latest)
        if item.concurrent is not None:
            futs.extend(item.concurrent[1])
        return
    if t is list or t is tuple:
        tracked = registry.objects
        for x in obj:
            if type(x) is Future and not tracked:      # the common case, inline
                futs.append(x)
            elif type(x) not in _PLAIN:
                _collect(x, registry, futs, depth + 1)
    elif t is dict:
        for k, v in obj.items():
            _collect(k, registry, futs, depth + 1)
            _collect(v, registry, futs, depth + 1)


def _resolve(obj: Any, registry: Registry, depth: int = 0, in_place: bool = True) -> Any:
    t = type(obj)
    if t is Future:
        item = registry.object_item(obj)
        if item is not None and item.obj is obj:
            registry.forget_object(obj)
            return _report(item.latest).result()
        return _report(obj).result()
    item = registry.object_item(obj) if registry.objects else None
    if item is not None and item.obj is obj:
        latest = _report(item.latest)
        value = latest.result()
        registry.forget_object(obj)
        return obj if in_place and update_in_place(obj, value) else value
    if depth > 100:
        return obj
    if t is list or t is tuple:
        if not registry.objects:
            out = []
            asked = 0       # the items before it were looked at by _ask_ahead (values on
            #                 their nodes: inline ones are here already)
            for i, x in enumerate(obj):
                if type(x) is Future and x._exception is None and x._state == "FINISHED":
                    v = x._result
                    if v is _NOVALUE:
                        if (x._payload is None or x._holders) and i + AHEAD >= asked:
                            asked = _ask_ahead(obj, max(i, asked), i + AHEAD + 1)
                        v = x._value()
                    out.append(v)
                else:
                    out.append(_resolve(x, registry, depth + 1, in_place))
        else:
            out = [_resolve(x, registry, depth + 1, in_place) for x in obj]
        return out if t is list else tuple(out)
    if t is dict:
        return {_resolve(k, registry, depth + 1, in_place):
                _resolve(v, registry, depth + 1, in_place) for k, v in obj.items()}
    return obj


# Values a wait_on of a list or a tuple (or of several futures) asks for ahead of the one it
# reads, when they stayed on their nodes (over the inline limit): their moves and their
# resume-log writes overlap the read instead of taking turns, and the master holds at most
# this many values more than it would.
AHEAD = 4


def _ask_ahead(items: list[Any] | tuple[Any, ...], lo: int, hi: int) -> int:
    """Ask for the values of the futures in ``items[lo:hi]`` left on their nodes, not
    waiting for them (:meth:`~taskflow.runtime.loop.fetches.Fetches.ahead` looks again
    under the run's lock); returns where the next call starts."""
    futs = [x for x in items[lo:hi] if type(x) is Future and x._result is _NOVALUE
            and x._payload is None and x._holders]      # (not read yet, on a node only)
    if futs and futs[0]._rt is not None:
        futs[0]._rt.prefetch(futs)
    return max(lo, min(hi, len(items)))


def _report(fut: Future) -> Future:
    exc = fut._exception
    if exc is not None:
        exc.seen()
    return fut


def _met(errs: list[TaskError]) -> None:
    """A barrier raises the first of the failures it found: the program that catches it
    has met them all."""
    for e in errs:
        e.met()


def wait_on(*objs: object, timeout: float | None = None, in_place: bool = True,
            strict: bool = True) -> Any:
    """Wait for futures (recursively inside lists, tuples and dicts) and return values.

    A task's error is raised here with its remote traceback. An object passed
    INOUT is brought up to date (in place when its type allows) and returned;
    ``in_place=False`` (PyCOMPSs's ``compss_wait_on``) returns its new value as a new
    object and leaves the one passed as it was. Several objects give a tuple; any other
    value comes back as it is; a generator, an iterator or a task function is a
    ``UsageError`` (give ``list(...)``; call the task). ``timeout`` (s) raises
    ``concurrent.futures.TimeoutError`` when a task is not done by then. ``strict=False``
    (``compss_wait_on``) gives back a function or an iterator that no task wrote as it is,
    as PyCOMPSs does with any object it does not track, instead of refusing it as a likely
    mistake.

    Example::

        from taskflow import task, wait_on

        @task(returns=int)
        def square(x: int) -> int:
            return x * x

        print(wait_on(square(3)))                         # 9
        print(wait_on([square(i) for i in range(4)]))     # [0, 1, 4, 9]
        a, b = wait_on(square(2), square(5))              # 4 25
    """
    rt = _rt()
    handler = nest() if rt is None and in_worker() else None    # in a running task
    ours = Future if handler is None else handler.Handle
    for o in objs if strict else ():
        t = type(o)
        if t is not ours and t not in _CONTAINERS and t not in _PLAIN and (
                rt is None or not rt.registry.objects or rt.registry.object_item(o) is None):
            _refuse_mistake(o)          # (an object passed INOUT is waited for, whatever it is)
    if handler is not None:             # the tasks it called
        return handler.wait_on(*objs, in_place=in_place)
    if rt is None:
        if any(isinstance(o, Future) for o in objs):
            raise UsageError("wait_on: these futures belong to a runtime that has stopped")
        return objs[0] if len(objs) == 1 else objs
    futs: list[Future] = []
    registry = rt.registry
    for o in objs:
        _collect(o, registry, futs)
    if futs and not rt.wait_futures(futs, timeout):
        import concurrent.futures
        raise concurrent.futures.TimeoutError(f"wait_on: not done after {timeout} s")
    out = _resolve(objs, registry, -1, in_place)     # (a tuple: its items at depth 0)
    return out[0] if len(objs) == 1 else out


_CONTAINERS = frozenset({list, tuple, dict})


def _refuse_mistake(obj: Any) -> None:
    """``wait_on`` of what can only be a mistake: a generator (its futures would be made
    after wait_on returned: nothing waited, no error), a task function (not a call of it)."""
    import inspect
    import types
    if isinstance(obj, (types.GeneratorType, types.AsyncGeneratorType)) or (
            hasattr(obj, "__next__") and hasattr(obj, "__iter__")
            and not inspect.isclass(obj)):
        raise UsageError(
            f"wait_on({type(obj).__name__} object): an iterator is not waited for (its items "
            f"are made one by one, after wait_on would return); give a list: "
            f"wait_on(list(...)) or wait_on([f(x) for x in ...])")
    if inspect.iscoroutine(obj):
        raise UsageError("wait_on(coroutine): taskflow futures are not awaitables; await the "
                         "coroutine yourself, or make its function a task")
    spec = getattr(obj, "spec", None)
    name = getattr(obj, "__qualname__", None) or getattr(obj, "__name__", repr(obj))
    if getattr(spec, "wrapper", None) is obj:      # a @task function (api.task.TaskFunction)
        raise UsageError(f"wait_on({name}): that is the task function itself, not a call of "
                         f"it; call it and wait for what it returns: wait_on({name}(...))")
    if inspect.isroutine(obj):
        raise UsageError(f"wait_on({name}): that is a function, not a future; wait for what "
                         f"a task call returns: wait_on(task(...))")


def _file_item(path: Any, fn: str) -> tuple[Any, str]:
    if not isinstance(path, (str, os.PathLike)):
        raise UsageError(f"{fn}: expected a path, got {path!r}")
    rt = _rt()
    p = os.path.abspath(os.fspath(path))
    if rt is None:
        return None, p
    return rt.registry.file_item(p), p


def _wait_item(rt: FutureHost, item: Any) -> None:
    futs = [item.latest]
    readers = [t for t in item.readers_v0 if t.state not in T.FINAL_STATES]
    item.readers_v0 = readers
    for t in readers:
        futs.extend(t.all_outputs())
    rt.wait_futures(futs)
    exc = item.latest._exception
    if exc is not None:
        exc.met()
        raise exc


def wait_on_file(*paths: str | os.PathLike[str]) -> str | list[str]:
    """Wait until the last task writing each file ended and put it at its path.

    From then on the file belongs to the program: a task given the path later
    reads it as it is then, with whatever the program wrote to it meanwhile. Returns
    the path (a list for several). A path no task uses and that does not exist is a
    ``UsageError``; a generator or a future is one too.

    Example::

        from taskflow import FILE_OUT, task, wait_on_file

        @task(path=FILE_OUT)
        def write(path: str, text: str) -> None:
            with open(path, "w") as f:
                f.write(text)

        write("hello.txt", "hello")
        wait_on_file("hello.txt")
        print(open("hello.txt").read())                   # hello
    """
    rt = _rt()
    if rt is None and in_worker() and nest() is not None:     # in a running task
        done: str | list[str] = nest().wait_on_file(*paths)
        return done
    out = []
    for path in paths:
        item, p = _file_item(path, "wait_on_file")
        if item is not None:
            _wait_item(rt, item)
            if rt.registry.puts_in_place:   # (not a plan's)
                materialize(item)
            rt.registry.forget_file(p)      # the program's file again (see the docstring)
        elif rt is not None and not os.path.exists(p):
            close = _close_path(rt.registry, p)
            raise UsageError(f"wait_on_file: no task reads or writes {p} and it does not "
                             f"exist{close}; pass the path the tasks use")
        out.append(os.fspath(path))
    return out[0] if len(out) == 1 else out


def _close_path(registry: Registry, p: str) -> str:
    import difflib
    close = difflib.get_close_matches(p, list(registry.files), n=1)
    return f" (did you mean {close[0]}?)" if close else ""


def wait_on_directory(*paths: str | os.PathLike[str]) -> str | list[str]:
    """``wait_on_file`` for directories (``DIRECTORY_OUT`` / ``DIRECTORY_INOUT``).

    Example::

        import os
        from taskflow import DIRECTORY_OUT, task, wait_on_directory

        @task(out=DIRECTORY_OUT)
        def split(out: str) -> None:
            os.makedirs(out, exist_ok=True)
            for i in range(3):
                open(os.path.join(out, f"part{i}"), "w").close()

        split("parts")
        wait_on_directory("parts")
        print(sorted(os.listdir("parts")))                # ['part0', 'part1', 'part2']
    """
    return wait_on_file(*paths)


def open(path: str | os.PathLike[str], mode: str = "r", buffering: int = -1,  # noqa: A001
         encoding: str | None = None, errors: str | None = None,
         newline: str | None = None) -> IO[Any]:
    """``open`` after the file's tasks are done; writing makes it the user's file again.

    The arguments are :func:`builtins.open`'s.

    Example::

        import taskflow
        from taskflow import FILE_OUT, task

        @task(path=FILE_OUT)
        def write(path: str) -> None:
            with open(path, "w") as f:
                f.write("42\\n")

        write("answer.txt")
        with taskflow.open("answer.txt") as f:           # waits for write
            print(f.read().strip())                       # 42
    """
    if _rt() is None and in_worker() and nest() is not None:  # in a running task
        nest().wait_on_file(path)
    item, p = _file_item(path, "taskflow.open")
    if item is not None:
        rt = _rt()
        _wait_item(rt, item)
        if rt.registry.puts_in_place:       # (not a plan's)
            materialize(item)
        rt.registry.forget_file(p)          # the program's file from now on (wait_on_file)
    return builtins.open(p, mode, buffering, encoding, errors, newline)


def barrier(no_more_tasks: bool = False) -> None:
    """Wait for every task so far; put files in place; raise an unreported failure.

    ``no_more_tasks`` is PyCOMPSs's argument, accepted and without effect.

    Example::

        from taskflow import FILE_OUT, barrier, task

        @task(path=FILE_OUT)
        def touch(path: str) -> None:
            open(path, "w").close()

        for i in range(3):
            touch(f"done-{i}.txt")
        barrier()                                         # the three files are there
    """
    rt = _rt()
    if rt is None:
        if in_worker() and nest() is not None:     # in a running task: the tasks it called
            nest().barrier()
        return
    rt.wait_all()
    rt.put_in_place(idle=True)
    files = rt.registry.files               # every file is the program's again (wait_on_file),
    for p, item in list(files.items()):     # but a failed version stays: its readers are
        if item.latest is None or item.latest._exception is None:    # cancelled, not fed
            del files[p]                    # the stale file

    errs = rt.unreported_failures()
    if errs:
        _met(errs)
        raise errs[0]


def delete_file(path: str | os.PathLike[str]) -> bool:
    """Forget a file and remove it once the tasks using it are done; True if a file was
    removed at ``path`` (a version the tasks wrote and nobody put in place is just dropped).

    Example::

        from taskflow import FILE_OUT, delete_file, task

        @task(path=FILE_OUT)
        def scratch(path: str) -> None:
            open(path, "w").close()

        scratch("tmp.dat")
        delete_file("tmp.dat")                            # after scratch ran: no tmp.dat left
    """
    item, p = _file_item(path, "delete_file")
    if item is not None:
        rt = _rt()
        try:
            _wait_item(rt, item)
        except Exception:
            pass
        rt.registry.forget_file(p)
    rt = _rt()
    if rt is not None and not rt.registry.puts_in_place:
        return os.path.exists(p)            # a plan deletes nothing
    if os.path.isdir(p):
        shutil.rmtree(p)
        return True
    if os.path.exists(p):
        os.unlink(p)
        return True
    return False


def delete_object(obj: object) -> bool:
    """Forget an object the runtime tracks (one passed ``INOUT``); True if it did.

    Example::

        from taskflow import INOUT, delete_object, task, wait_on

        @task(xs=INOUT)
        def append(xs: list[int]) -> None:
            xs.append(1)

        xs: list[int] = []
        append(xs)
        print(delete_object(xs))                          # True: xs is not tracked any more
        print(wait_on(xs))                                # [] (append changed its own copy)
    """
    rt = _rt()
    if rt is None:
        return False
    return rt.registry.forget_object(obj) is not None


def file_exists(*paths: str | os.PathLike[str]) -> bool | list[bool]:
    """Whether each file exists, counting the versions tasks write (a list for several).

    Example::

        from taskflow import FILE_OUT, file_exists, task

        @task(path=FILE_OUT)
        def touch(path: str) -> None:
            open(path, "w").close()

        touch("made.txt")
        print(file_exists("made.txt", "never.txt"))       # [True, False]
    """
    out = []
    for path in paths:
        item, p = _file_item(path, "file_exists")
        if item is not None and item.latest is not item.materialized:
            rt = _rt()
            rt.wait_futures([item.latest])
            v = item.latest
            out.append(v._exception is None and v._path is not None and os.path.exists(v._path))
        else:
            out.append(os.path.exists(p))
    return out[0] if len(out) == 1 else out


def number_of_resources() -> int:
    """How many of the run's nodes are alive now (starting the runtime if none runs).

    Example::

        from taskflow import number_of_resources

        print(number_of_resources())                      # 1 under a plain `taskflow run`
    """
    rt = embedded.get_or_start()
    return sum(1 for n in rt.nodes if n.alive)


class TaskGroup:
    """Name the tasks called inside; ``barrier_group(name)`` waits for them.

    With ``implicit_barrier=True`` (the default, as in PyCOMPSs) leaving the
    block waits for the group.

    Example::

        from taskflow import TaskGroup, barrier_group, task, wait_on

        @task(returns=int)
        def square(x: int) -> int:
            return x * x

        with TaskGroup("squares", implicit_barrier=False):
            futures = [square(i) for i in range(4)]
        barrier_group("squares")                          # raises the group's first failure
        print(wait_on(futures))                           # [0, 1, 4, 9]
    """

    def __init__(self, name: str, implicit_barrier: bool = True) -> None:
        self.name = name
        self.implicit_barrier = implicit_barrier

    def __enter__(self) -> "TaskGroup":
        rt = embedded.get_or_start()
        rt.groups.setdefault(self.name, [])
        rt.group_stack.append(self.name)
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        rt = current.get()
        if rt is not None and rt.group_stack and rt.group_stack[-1] == self.name:
            rt.group_stack.pop()
        if exc_type is None and self.implicit_barrier:
            barrier_group(self.name)


def barrier_group(name: str) -> None:
    """Wait for the tasks of a group; raise the first failure among them.

    When a task of the group raised :class:`~taskflow.errors.GroupAbort`
    (PyCOMPSs's ``COMPSsException``), that exception is raised here, as its
    own class, once the group's other tasks are cancelled or ended.

    Example::

        from taskflow import TaskError, TaskGroup, barrier_group, task

        @task(returns=float)
        def inverse(x: int) -> float:
            return 1 / x

        with TaskGroup("inverses", implicit_barrier=False):
            for x in (1, 0, 2):
                inverse(x)
        try:
            barrier_group("inverses")
        except ZeroDivisionError as err:                  # also a TaskError
            print("failed:", isinstance(err, TaskError))  # failed: True
    """
    rt = _rt()
    if rt is None or name not in rt.groups:
        raise UsageError(f"barrier_group: no task group named {name!r}")
    tasks = rt.groups[name]
    futs = [f for t in tasks for f in t.all_outputs()]
    rt.wait_futures(futs)
    from ..runtime.rules.cancel import claim_abort
    with rt.lock:
        abort = claim_abort(rt, name)
    errs = rt.unreported_failures(tasks)
    rt.groups[name] = []
    if abort is not None:
        raise abort
    if errs:
        _met(errs)
        raise errs[0]


def cancel_group(name: str) -> int:
    """Cancel the tasks of a group that have not ended; return how many were.

    Waiting tasks never run, running ones are killed (a program gets
    SIGTERM); their values raise :class:`~taskflow.errors.TaskCancelled`.
    A :class:`~taskflow.errors.GroupAbort` a task of the group raised is
    raised here.

    Example::

        import time
        from taskflow import TaskCancelled, TaskGroup, cancel_group, task, wait_on

        @task(returns=int)
        def slow(x: int) -> int:
            time.sleep(30)
            return x

        with TaskGroup("slow", implicit_barrier=False):
            f = slow(1)
        print(cancel_group("slow"))                       # 1
        try:
            wait_on(f)
        except TaskCancelled:
            print("cancelled")
    """
    rt = _rt()
    if rt is None or name not in rt.groups:
        raise UsageError(f"cancel_group: no task group named {name!r}")
    from ..runtime.rules.cancel import cancel_tasks, claim_abort
    cbs: list[Any] = []
    with rt.lock:
        n = cancel_tasks(rt, rt.groups[name], f"its task group {name!r} was cancelled", cbs)
        abort = claim_abort(rt, name)
    for fn, fut in cbs:
        fn(fut)
    rt.groups[name] = []
    if abort is not None:
        raise abort
    return n
