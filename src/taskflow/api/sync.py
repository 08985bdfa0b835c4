"""Where the main program waits: wait_on, barrier, files, groups.

These are the PyCOMPSs verbs without the ``compss_`` prefix.
"""
from __future__ import annotations

import builtins
import os
import shutil
from typing import TYPE_CHECKING, Any

from ..context import in_worker, nest
from ..errors import UsageError
from ..future import _NOVALUE, Future
from ..graph import task as T
from ..graph.registry import materialize
from ..runtime import current, embedded

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
        return obj if in_place and _update_in_place(obj, value) else value
    if depth > 100:
        return obj
    if t is list:
        if not registry.objects:
            out = []
            for x in obj:
                if type(x) is Future and x._exception is None and x._state == "FINISHED":
                    v = x._result
                    out.append(x._value() if v is _NOVALUE else v)
                else:
                    out.append(_resolve(x, registry, depth + 1, in_place))
            return out
        return [_resolve(x, registry, depth + 1, in_place) for x in obj]
    if t is tuple:
        return tuple(_resolve(x, registry, depth + 1, in_place) for x in obj)
    if t is dict:
        return {_resolve(k, registry, depth + 1, in_place):
                _resolve(v, registry, depth + 1, in_place) for k, v in obj.items()}
    return obj


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


def _update_in_place(obj: Any, value: Any) -> bool:
    """Make the user's object equal to the task's version of it, if the type allows."""
    if value is obj:
        return True
    try:
        if isinstance(obj, list) and isinstance(value, list):
            obj[:] = value
        elif isinstance(obj, dict) and isinstance(value, dict):
            obj.clear()
            obj.update(value)
        elif isinstance(obj, set) and isinstance(value, set):
            obj.clear()
            obj.update(value)
        elif isinstance(obj, bytearray) and isinstance(value, (bytes, bytearray)):
            obj[:] = value
        elif hasattr(obj, "__array__") and hasattr(obj, "shape") and \
                getattr(value, "shape", None) == obj.shape:
            obj[...] = value
        elif type(obj) is type(value) and hasattr(obj, "__dict__"):
            obj.__dict__.clear()
            obj.__dict__.update(value.__dict__)
        else:
            return False
        return True
    except Exception:
        return False


def wait_on(*objs: Any, timeout: float | None = None, in_place: bool = True,
            strict: bool = True) -> Any:
    """Wait for futures (recursively inside lists, tuples and dicts) and return values.

    A task's error is raised here with its remote traceback. An object passed
    INOUT is brought up to date (in place when its type allows) and returned;
    ``in_place=False`` (PyCOMPSs's ``compss_wait_on``) returns its new value as a new
    object and leaves the one passed as it was. ``strict=False`` (``compss_wait_on`` too)
    gives back a function or an iterator that no task wrote as it is, as PyCOMPSs does
    with any object it does not track, instead of refusing it as a likely mistake.
    """
    rt = _rt()
    for o in objs if strict else ():
        t = type(o)
        if t is not Future and t not in _CONTAINERS and t not in _PLAIN and (
                rt is None or not rt.registry.objects or rt.registry.object_item(o) is None):
            _refuse_mistake(o)          # (an object passed INOUT is waited for, whatever it is)
    if rt is None:
        if in_worker() and nest() is not None:     # in a running task: the tasks it called
            return nest().wait_on(*objs)
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
    out = tuple(_resolve(o, registry, 0, in_place) for o in objs)
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


def wait_on_file(*paths: Any) -> Any:
    """Wait until the last task writing each file ended and put it at its path.

    From then on the file belongs to the program: a task given the path later
    reads it as it is then, with whatever the program wrote to it meanwhile.
    """
    rt = _rt()
    if rt is None and in_worker() and nest() is not None:     # in a running task
        return nest().wait_on_file(*paths)
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


def wait_on_directory(*paths: Any) -> Any:
    """``wait_on_file`` for directories (``DIRECTORY_OUT`` / ``DIRECTORY_INOUT``)."""
    return wait_on_file(*paths)


def open(path: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:  # noqa: A001
    """``open`` after the file's tasks are done; writing makes it the user's file again."""
    if _rt() is None and in_worker() and nest() is not None:  # in a running task
        nest().wait_on_file(path)
    item, p = _file_item(path, "taskflow.open")
    if item is not None:
        rt = _rt()
        _wait_item(rt, item)
        if rt.registry.puts_in_place:       # (not a plan's)
            materialize(item)
        rt.registry.forget_file(p)          # the program's file from now on (wait_on_file)
    return builtins.open(p, mode, *args, **kwargs)


def barrier(no_more_tasks: bool = False) -> None:
    """Wait for every task so far; put files in place; raise an unreported failure."""
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


def delete_file(path: Any) -> bool:
    """Forget a file and remove it once the tasks using it are done."""
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


def delete_object(obj: Any) -> bool:
    """Forget an object the runtime tracks (one passed ``INOUT``); True if it did."""
    rt = _rt()
    if rt is None:
        return False
    return rt.registry.forget_object(obj) is not None


def file_exists(*paths: Any) -> Any:
    """Whether each file exists, counting the versions tasks write."""
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
    """How many of the run's nodes are alive now (starting the runtime if none runs)."""
    rt = embedded.get_or_start()
    return sum(1 for n in rt.nodes if n.alive)


class TaskGroup:
    """Name the tasks called inside; ``barrier_group(name)`` waits for them.

    With ``implicit_barrier=True`` (the default, as in PyCOMPSs) leaving the
    block waits for the group.
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
