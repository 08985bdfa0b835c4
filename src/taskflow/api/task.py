"""``@task``: turn a function into one whose calls record tasks.

Everything that can be known from the declaration is computed once here, in
:class:`TaskSpec`, so that a call only does per-call work.

Reserved keyword arguments: ``returns``, ``priority``, ``time_out``,
``on_failure``, ``retries``; every other keyword names a parameter of the
function and gives its direction.
"""
from __future__ import annotations

import functools
import inspect
import sys
from typing import Any, Callable, Mapping

from ..context import in_worker, nest
from ..errors import ParameterError, UsageError
from ..graph.param import COLLECTION_KIND, OBJECT_KIND, Param
from ..graph.spec import TaskSpec, declared_key
from ..runtime import current as _current
from ..runtime import embedded as _embedded
from ..wire.writes import BY_VALUE, Written
from .hints import did_you_mean
from .parameter import IN, parse_param

KEYWORDS = ("returns", "priority", "time_out", "on_failure", "retries")    # @task's own
_RESERVED = {*KEYWORDS, "target_direction", "numba", "cache_returns"}       # + PyCOMPSs's


class TaskFunction:
    """The callable a ``@task`` decoration returns."""

    def __init__(self, func: Callable[..., Any], spec: TaskSpec) -> None:
        self.__wrapped__ = func
        self.spec = spec
        self._writes: Written | None = None     # written_objects(spec), at the first call in a task
        self._here: Any = False     # the function if a call may run in its caller (runs_here)
        spec.wrapped_by(self)
        functools.update_wrapper(self, func)

    def nested_shape(self) -> tuple[int | None, str]:
        """(outputs, how the call's value holds them) for a call inside a task
        (agent.executor.nested): as :meth:`Runtime.submit` gives them."""
        spec = self.spec
        if spec.nout > 1:
            return spec.nout, "tuple"
        return 1, "tuple" if spec.returns_tuple else "one"

    def nested_writes(self) -> Written:
        """The parameters a call in a task may not give a parent's object (kept)."""
        w = self._writes
        if w is None:
            w = self._writes = written_objects(self.spec)
        return w

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if in_worker():      # a task called inside a running task: its child
            handler = nest()
            if handler is None:             # (an MPI rank, a container): inline
                return self.__wrapped__(*args, **kwargs)
            writes = self.nested_writes()
            if writes:
                refuse_written(self.spec.name, writes, args, kwargs)
            n, shape = self.nested_shape()
            here = self._here
            if here is False:
                here = self._here = self.__wrapped__ if runs_here(self.spec) else None
            return handler.call(declared_key(self.spec), n, shape, self.spec.name, args,
                                kwargs, writes, here)
        rt = _current._current
        if rt is None:
            rt = _embedded.get_or_start()
        return rt.submit(self.spec, args, kwargs)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Inside a worker a task function is its function, calling which records a child
        # task (WorkerTask): by reference when its module can be imported there, else by
        # value (cloudpickle).
        spec = self.spec
        mod = sys.modules.get(spec.module)
        if spec.module != "__main__" and mod is not None and "<locals>" not in spec.name:
            obj: Any = mod
            for part in spec.name.split("."):
                obj = getattr(obj, part, None)
            if obj is self:
                return (_load_task_function, (spec.module, spec.name))
        n, shape = self.nested_shape()
        return (WorkerTask, (self.__wrapped__, declared_key(spec), n, shape,
                             written_objects(spec), runs_here(spec)))

    def __repr__(self) -> str:
        return f"<taskflow task {self.spec.name}>"


def runs_here(spec: TaskSpec) -> bool:
    """Whether a call of ``spec`` made in a task may run in the caller's executor
    (agent/executor/runhere.py decides per call: scalar arguments, and a mean duration
    known to be short there): a plain Python function with every default, nothing that
    asks for a placement, a limit, a file, a stream or another failure policy; declared
    where the master finds it (not inside a function: the master refuses such a call)."""
    return ("<locals>" not in spec.name and spec.plain and not spec.returns_tuple and spec.invoker == "python"
            and spec.program is None and spec.container is None and spec.hooks is None
            and spec.options is None and spec.time_out is None and spec.computing_units == 1
            and not spec.memory_size and not spec.processors and spec.resources is None
            and spec.variants is None and not spec.call_time and spec.pin is None
            and not spec.io and not spec.gang and not spec.gpus and spec.need is None
            and spec.on_failure == "RETRY" and spec.failure_defaults is None
            and not spec.kwonly and spec.varkw is None)


_BODIES: dict[str, Callable[..., Any]] = {}     # key -> function of the task functions here


class WorkerTask:
    """A task function as a worker has it when it came by value: called by a running
    task, it records a child task (as :class:`TaskFunction` does); elsewhere its function
    runs. Tasks themselves run its plain function (the executor is sent that)."""

    def __init__(self, func: Callable[..., Any] | None, key: str, nout: int | None,
                 shape: str, writes: Written = (), here: bool = False) -> None:
        # (func None: a PyCOMPSs task referring to itself, which only a task calls)
        self.__wrapped__ = self.__taskflow_body__ = func
        self.key, self.nout, self.shape, self.writes = key, nout, shape, writes
        self.here = func if here else None      # (runs_here: its caller may run it)
        if func is not None:
            functools.update_wrapper(self, func)
            _BODIES[key] = func         # (what a self-reference runs inline)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        handler = nest() if in_worker() else None
        if handler is None:             # inline (an MPI rank, a container, PyCOMPSs's apps)
            func = self.__wrapped__ or _BODIES.get(self.key)
            if func is None:
                raise UsageError(f"task {self.key} can be called here only by a running task")
            return func(*args, **kwargs)
        name = self.key.split(":", 1)[1]
        if self.writes:
            refuse_written(name, self.writes, args, kwargs)
        return handler.call(self.key, self.nout, self.shape, name, args, kwargs, self.writes,
                            self.here)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:                 # (a task method: called on an object, it is self)
            return self
        return functools.partial(self.__call__, obj)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        return (WorkerTask, (self.__wrapped__, self.key, self.nout, self.shape, self.writes))


def written_objects(spec: TaskSpec) -> Written:
    """The object parameters (and collections of objects) a call of ``spec`` writes in
    place: INOUT, OUT, CONCURRENT, COMMUTATIVE (:mod:`taskflow.wire.writes`). Files are not
    among them (a parent reads what its children wrote with ``wait_on_file``)."""
    return tuple((n, spec.index.get(n), p.direction, p.kind == OBJECT_KIND)
                 for n, p in spec.params.items()
                 if p.writes and (p.kind == OBJECT_KIND or (p.kind == COLLECTION_KIND
                                                           and p.elem_kind == OBJECT_KIND)))


def refuse_written(name: str, writes: Written, args: tuple[Any, ...],
                   kwargs: dict[str, Any]) -> None:
    """A call made inside a running task that gives a mutable collection to a collection
    parameter the task writes: an error at the call. The child would write a copy made for
    it, and the parent's collection would stay as it was: a silent wrong result. (A written
    object is followed instead: :mod:`taskflow.wire.writes`.)"""
    for pname, pos, direction, is_object in writes:
        if is_object:
            continue
        if pos is not None and pos < len(args):
            value = args[pos]
        elif pname in kwargs:
            value = kwargs[pname]
        else:
            continue
        if isinstance(value, BY_VALUE):
            continue
        raise UsageError(
            f"task {name} was called inside a running task with parameter '{pname}' "
            f"COLLECTION_{direction} (a {type(value).__name__}): a task called by a task "
            f"cannot write a collection of its parent in place (the parent would keep the "
            f"old one); return the new values instead (returns=...), or make the call in "
            f"the main program")


def _load_task_function(module: str, qualname: str) -> Callable[..., Any]:
    import importlib
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj.__wrapped__ if isinstance(obj, TaskFunction) else obj


def task(_func: Callable[..., Any] | None = None, *,
         returns: type | int | str | tuple[type | str, ...] | None = None,
         priority: bool | int = False, time_out: float | None = None,
         on_failure: str = "RETRY", retries: int | None = None,
         **directions: Param | str | Mapping[str, object]) -> Any:
    """Declare a task. ``@task`` or ``@task(returns=int, x=INOUT, f=FILE_IN, ...)``.

    Calling the decorated function records a task and returns a future (a tuple
    of futures for several values) at once; the task runs when its inputs are ready.

    Example::

        from taskflow import FILE_IN, task, wait_on

        @task(returns=int, path=FILE_IN)
        def count_lines(path: str) -> int:
            with open(path) as f:
                return sum(1 for _ in f)

        with open("notes.txt", "w") as f:
            f.write("one\\ntwo\\n")
        print(wait_on(count_lines("notes.txt")))      # 2

    :param returns: a type (``int``), a count (``2`` gives a tuple of two futures),
        a tuple of types, or inferred from a ``-> tuple[int, str]`` hint; the types
        are documentation, as in PyCOMPSs, and are not checked. A string is a count
        (``"2"``) or a type as text; any other (``"two"``) is a UsageError here.
    :param priority: ``True`` puts a call ahead of every ready call without it.
    :param time_out: seconds after which a running call is stopped (``TaskTimeout``).
    :param on_failure: ``RETRY`` (the default), ``FAIL``, ``IGNORE`` or ``CANCEL_SUCCESSORS``.
    :param retries: how many times ``RETRY`` runs a failed call again (default: the
        runtime's, 0: ``Runtime(retries=N)``, ``taskflow run --retries N``).
    :param directions: every other keyword names a parameter of the function and gives
        its direction (``INOUT``, ``FILE_IN``, ...; ``IN`` when not given): a constant,
        its name as a string (``"FILE_IN"``) or the dictionary form
        (``{Type: FILE_IN, StdIOStream: STDIN}``).
    """

    def decorate(func: Callable[..., Any]) -> TaskFunction:
        if isinstance(func, TaskFunction):
            raise UsageError(f"@task applied twice to {func.spec.name}.")
        if not callable(func):
            raise UsageError(f"@task must decorate a function, not {func!r}.")
        name = getattr(func, "__qualname__", repr(func))
        if inspect.isgeneratorfunction(func) or inspect.isasyncgenfunction(func):
            raise UsageError(f"@task on {name}: a generator function cannot be a task (its "
                             f"values would be produced lazily, on the node); return a list "
                             f"instead, or make each item a task.")
        if inspect.iscoroutinefunction(func):
            raise UsageError(f"@task on {name}: an async function cannot be a task; make it "
                             f"a plain function (asyncio.run inside it if it must await).")
        sig = inspect.signature(func)
        pnames = [p for p in sig.parameters]
        params: dict[str, Param] = {}
        for key, value in directions.items():
            if key in _RESERVED:
                continue
            if key not in sig.parameters:
                # a misspelt parameter or a misspelt keyword of @task (retruns=int)
                raise UsageError(
                    f"@task on {name}: '{key}' is not a parameter of {name}"
                    f"({', '.join(pnames)}) nor a keyword of @task."
                    f"{did_you_mean(key, [*pnames, *KEYWORDS])} Keyword arguments of @task "
                    f"other than {'/'.join(KEYWORDS)} name parameters.")
            try:
                params[key] = parse_param(value, f"@task on {name}, parameter '{key}'")
            except ParameterError as exc:
                raise UsageError(str(exc)) from None
        spec = TaskSpec(func, params, returns, priority, time_out, on_failure, retries)
        pending = getattr(func, "__taskflow_constraint__", None)
        if pending:
            spec.set_constraints(**pending)
        return TaskFunction(func, spec)

    if _func is not None and callable(_func) and not directions and returns is None:
        return decorate(_func)
    return decorate


__all__ = ["task", "TaskFunction", "TaskSpec", "IN"]
