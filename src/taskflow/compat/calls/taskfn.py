"""A PyCOMPSs task function: taskflow's :class:`TaskFunction` with PyCOMPSs's call semantics.

What differs from a native task is decided per call, on the master, before
the call reaches :meth:`Runtime.submit`:

- the number of outputs (``returns`` read from the source, a module global,
  ``value_of(param.attr)``, a call-time ``returns=`` override), and several
  outputs come back as a *list*; no outputs gives ``None``;
- ``None`` for a FILE / DIRECTORY parameter reaches the task as ``None``;
- ``returns=SomeClass`` gives an instance of that class that stands for the
  future value (a task method can be called on it; ``compss_wait_on`` fills it);
- constraints that name a module global, a parameter or ``$ENV``.

Each combination gets its own :class:`~taskflow.graph.spec.TaskSpec`, a
shallow copy of the declared one (:meth:`CompatTaskFunction.variant`), made
once and reused; the graph, the scheduler and the nodes see ordinary specs.

On a worker the function is unpickled only after the ``pycompss`` alias is
installed there (:func:`taskflow.compat.importhook.load_task_function`).
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable

import cloudpickle

from ...api.task import TaskFunction, WorkerTask, refuse_written, written_objects
from ...graph.spec import declared_key
from ...context import in_worker, nest
from ...errors import UsageError
from ...future import Future
from ...graph.expr import bind
from ...graph.param import DIRECTORY_KIND, FILE_KIND
from ...runtime import current as _current
from ...runtime import embedded as _embedded
from ..generators import register as _register_generators
from . import implement as _impl
from . import returns as R
from .callargs import as_collections, future_collections, plain_params, returned_argument
from .decl import Decl
from .placing import check_ranks, local_node
from .variants import make_variant

if TYPE_CHECKING:
    from ...graph.spec import TaskSpec
    from .run import CompatRun


_REDUCING = threading.local()       # compat task functions being pickled now (__reduce__)
MAX_VARIANTS = 1024      # specs kept per task function (a dropped one is made again if needed)
_register_generators()   # a generator argument or value travels as its values


class CompatTaskFunction(TaskFunction):
    """The callable a PyCOMPSs ``@task`` returns (see the module docstring)."""

    def __init__(self, func: Callable[..., Any], spec: TaskSpec, decl: Decl) -> None:
        super().__init__(func, spec)
        self.decl = decl
        self._variants: dict[Any, TaskSpec] = {}
        self._lock = threading.Lock()
        self._fast: bool | None = None       # decided at the first call (_static_shape)

    def _static_shape(self) -> bool:
        """True when no call can differ from the declaration (every decorator has run)."""
        d = self.decl
        return (d.returns.dynamic is None and not d.returns.types and not d.file_params
                and not d.constraints and not d.checks and not d.cfg_globals
                and d.http is None and d.varargs is None and not d.replicated
                and d.reduction is None and not d.written and not d.written_collections
                and not d.collections and d.python_mpi is None and not d.is_local
                and d.returns.param is None and not d.io)

    # -- calls -----------------------------------------------------------------------
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        fast = self._fast
        if fast is None:
            fast = self._fast = self._static_shape()
        if fast and "returns" not in kwargs and not _impl.ALTERNATIVES and not in_worker():
            # nothing to decide per call: the declared spec as it is (most tasks)
            rt = _current._current or _embedded.get_or_start()
            value = rt.submit(self.spec, args, kwargs)
            n = self.decl.returns.fixed
            return value if n == 1 else (list(value) if n else None)
        call_returns = kwargs.pop("returns", R.UNSET)
        if in_worker():                  # a task called in a running task: its child
            return self._nested(args, kwargs, call_returns)
        decl = self.decl
        if decl.reduction is not None:
            from .reduction import reduce_call
            return reduce_call(self, args, kwargs, call_returns)
        if _impl.ALTERNATIVES:           # some @implement was declared: maybe for this task
            target = _impl.choose(self, args, kwargs)
            if target is not self:
                return target(*args, **kwargs) if call_returns is R.UNSET else \
                    target(*args, returns=call_returns, **kwargs)
        rt = _current._current or _embedded.get_or_start()
        return self.submit(rt, args, kwargs, call_returns)

    def _nested(self, args: tuple[Any, ...], kwargs: dict[str, Any], call_returns: Any) -> Any:
        """A call inside a running task (agent.executor.nested; inline where no executor
        records calls): PyCOMPSs's shape of value (one, a list, None), when it is fixed."""
        handler = nest()
        if handler is None:
            return self.__wrapped__(*args, **kwargs)
        writes = self.nested_writes()
        if writes:
            refuse_written(self.spec.name, writes, args, kwargs)
        rets = self.decl.returns
        n = rets.fixed if call_returns is R.UNSET and rets.dynamic is None \
            and rets.param is None and not rets.types else None
        shape = "none" if n == 0 else "one" if n == 1 else "list"
        if call_returns is not R.UNSET:
            kwargs = dict(kwargs, returns=call_returns)
        return handler.call(declared_key(self.spec), n, shape, self.spec.name, args, kwargs,
                            writes)

    def nested_shape(self) -> tuple[int | None, str]:
        rets = self.decl.returns
        n = rets.fixed if rets.dynamic is None and rets.param is None and not rets.types \
            else None
        return n, "none" if n == 0 else "one" if n == 1 else "list"

    def submit(self, rt: CompatRun, args: tuple[Any, ...], kwargs: dict[str, Any],
               call_returns: Any = R.UNSET) -> Any:
        spec = self.spec
        decl = self.decl
        bound: dict[str, Any] | None = None
        if decl.returns.dynamic or call_returns is not R.UNSET or decl.file_params \
                or decl.constraints or decl.checks or decl.written \
                or decl.written_collections or decl.collections or decl.returns.param:
            bound = bind(spec, args, kwargs)
            for check in decl.checks:
                check(bound)
            if decl.collections:
                args, kwargs = as_collections(spec, decl.collections, args, kwargs, bound)
        rets = decl.returns if call_returns is R.UNSET else \
            R.parse(call_returns, self.__wrapped__, spec.name, call_time=True)
        nout = rets.count(bound, self.__wrapped__, spec.name)
        plain = plain_params(decl, bound) if bound is not None else frozenset()
        objects: frozenset[str] = frozenset()
        if decl.collections and bound is not None:
            read, objects = future_collections(spec, decl, bound)
            plain = plain | read if read else plain
        cons = None
        if decl.constraints:
            from .constraints import resolve
            cons = resolve(decl.constraints, bound or {}, self.__wrapped__, spec.name)
        extra = self._cfg_extra() if (decl.cfg_globals or decl.http) else None
        if decl.varargs is not None and len(args) > len(spec.names):
            extra = (extra or ()) + (("*", len(args) - len(spec.names)),)
        if decl.replicated and len([n for n in rt.nodes if n.usable]) > 1:
            from .replicated import submit_replicas
            value = submit_replicas(self, rt, args, kwargs, nout, plain, cons)
            return self.shape(rt, value, nout, rets, None)
        pin = local_node(rt.nodes, spec.name) if decl.is_local else None
        io = decl.io and rt.io_executors > 0        # the nodes' I/O executors run it
        v = self.variant(nout, plain, cons, pin=pin, extra=extra, io=io, objects=objects)
        if decl.python_mpi is not None:
            check_ranks(v, decl.python_mpi, nout, bound)
        value = rt.submit(v, args, kwargs)
        if rets.param is not None:
            return returned_argument(rt, spec, rets.param, bound, value)
        return self.shape(rt, value, nout, rets, bound)

    def shape(self, rt: CompatRun, value: Any, nout: int, rets: R.Returns,
              bound: dict[str, Any] | None) -> Any:
        """The native call's value as PyCOMPSs gives it back (None, one, a list)."""
        if nout == 0:
            return None
        futs = list(value) if nout > 1 else [value]
        if rets.types:
            futs = [self._stand_in(rt, f, t) for f, t in zip(futs, rets.types)]
        return futs if nout > 1 else futs[0]

    @staticmethod
    def _stand_in(rt: CompatRun, fut: Future, typ: Any) -> Any:
        """``returns=SomeClass``: an empty instance that stands for the future value."""
        if not R.is_user_class(typ):
            return fut
        try:
            obj = typ()
        except Exception:  # noqa: BLE001 - no empty constructor: the future itself
            return fut
        with rt.submit_lock:
            rt.registry.track_object(obj, fut)
        return obj

    def _cfg_extra(self) -> tuple[tuple[str, Any], ...]:
        """Invoker values decided per call: module globals (@mpi processes=\"NP\"), the
        base URL of an @http service."""
        decl = self.decl
        out: list[tuple[str, Any]] = []
        g = getattr(self.__wrapped__, "__globals__", {})
        for key, gname in decl.cfg_globals.items():
            if gname not in g:
                raise UsageError(f"task {self.spec.name}: {key}={gname!r} names no module "
                                 f"global of {self.spec.module} (nor a number or $ENV).")
            try:
                out.append((key, int(g[gname])))
            except (TypeError, ValueError):
                raise UsageError(f"task {self.spec.name}: {key}={gname!r} is {g[gname]!r}, "
                                 f"not a number.") from None
        if decl.http is not None:
            from ..services import base_url
            out.append(("url", base_url(decl.http["service_name"], f"@http task "
                                                                   f"{self.spec.name}")))
        return tuple(out)

    # -- variants --------------------------------------------------------------------
    def variant(self, nout: int, plain: frozenset[str] = frozenset(),
                cons: tuple[Any, ...] | None = None, pin: str | None = None,
                extra: tuple[tuple[str, Any], ...] | None = None, io: bool = False,
                objects: frozenset[str] = frozenset()) -> TaskSpec:
        key = (nout, plain, cons, pin, extra, io, objects)
        v = self._variants.get(key)
        if v is not None:
            return v
        with self._lock:
            v = self._variants.get(key)
            if v is None:
                if len(self._variants) >= MAX_VARIANTS:     # bounded: the oldest half goes
                    for old in list(self._variants)[:MAX_VARIANTS // 2]:
                        del self._variants[old]
                v = self._variants[key] = make_variant(self.spec, max(nout, 1), plain,
                                                       cons, pin, extra, io, objects)
        return v

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # The native reduction (by reference, or the function by value), wrapped so that the
        # worker installs the pycompss alias before any of it is unpickled.
        from ..importhook import load_task_function
        reducing = _REDUCING.__dict__.setdefault("ids", set())
        if id(self) in reducing:        # itself, inside its own function (a recursive task):
            n, shape = self.nested_shape()     # enough for a call in a task (WorkerTask)
            return (WorkerTask, (None, declared_key(self.spec), n, shape,
                                 written_objects(self.spec)))
        reducing.add(id(self))
        try:
            loader, args = TaskFunction.__reduce__(self)
            return (load_task_function, (cloudpickle.dumps((loader, args)),))
        finally:
            reducing.discard(id(self))

    def __repr__(self) -> str:
        return f"<pycompss task {self.spec.name}>"


def file_params(spec: TaskSpec) -> frozenset[str]:
    return frozenset(n for n, p in spec.params.items() if p.kind in (FILE_KIND, DIRECTORY_KIND))


def task_function(target: Any, what: str) -> CompatTaskFunction:
    """``target`` as a PyCOMPSs task function, or a UsageError saying where ``what`` goes."""
    if isinstance(target, CompatTaskFunction):
        return target
    name = getattr(target, "__qualname__", repr(target))
    if isinstance(target, TaskFunction):
        raise UsageError(f"{what} on {name}: the task was declared with taskflow's @task; use "
                         f"pycompss.api.task.task under the PyCOMPSs decorators.")
    raise UsageError(f"{what} must be placed above @task (PyCOMPSs order: @implement -> "
                     f"@constraint -> @binary/@mpi/... -> @task), not on {name!r}.")
