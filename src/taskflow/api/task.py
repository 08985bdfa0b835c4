"""``@task``: turn a function into one whose calls record tasks.

Everything that can be known from the declaration is computed once here, in
:class:`TaskSpec`, so that a call only does per-call work.

Reserved keyword arguments: ``returns``, ``priority``, ``time_out``,
``on_failure``, ``retries``; every other keyword names a parameter of the
function and gives its direction.
"""
from __future__ import annotations

import difflib
import functools
import inspect
import sys
import typing
from typing import Any, Callable

from ..context import in_worker
from ..errors import UsageError
from ..runtime import current as _current
from .parameter import IN, OBJECT_KIND, Param, ParameterError, parse_param

ON_FAILURE = ("RETRY", "FAIL", "IGNORE", "CANCEL_SUCCESSORS")
_RESERVED = {"returns", "priority", "time_out", "on_failure", "retries",
             "target_direction", "numba", "cache_returns"}



class TaskSpec:
    """What a decorated function declares; shared by all of its calls."""

    def __init__(self, func: Callable, params: dict[str, Param], returns: Any,
                 priority: Any, time_out: Any, on_failure: str, retries: int | None) -> None:
        self.func = func
        self.name = getattr(func, "__qualname__", getattr(func, "__name__", "task"))
        self.module = getattr(func, "__module__", "")
        sig = inspect.signature(func)
        self.signature = sig
        self.names: list[str] = []
        self.defaults: dict[str, Any] = {}
        self.varargs: str | None = None
        self.varkw: str | None = None
        for p in sig.parameters.values():
            if p.kind is p.VAR_POSITIONAL:
                self.varargs = p.name
            elif p.kind is p.VAR_KEYWORD:
                self.varkw = p.name
            elif p.kind is not p.KEYWORD_ONLY:
                self.names.append(p.name)
            if p.default is not p.empty:
                self.defaults[p.name] = p.default
        self.kwonly = [p.name for p in sig.parameters.values() if p.kind is p.KEYWORD_ONLY]
        self.params = params
        self.index = {n: i for i, n in enumerate(self.names)}
        # (position or None, name, Param) of every parameter that is not a plain IN object
        self.special = [(self.index.get(n), n, p) for n, p in params.items()
                        if not (p.kind == OBJECT_KIND and p.direction == "IN")]
        self.nout, self.returns_tuple = _parse_returns(func, returns, self.name)
        # one output, no special parameter, no *args: calls with scalars take the fast path
        # (graph.builder)
        self.plain = not self.special and self.varargs is None and self.nout == 1
        self.priority = _parse_priority(priority, self.name)
        self.time_out = _parse_timeout(time_out, self.name)
        if on_failure not in ON_FAILURE:
            raise UsageError(f"@task on {self.name}: on_failure={on_failure!r} is not one of "
                             f"{', '.join(ON_FAILURE)}.")
        self.on_failure = on_failure
        if retries is not None and (not isinstance(retries, int) or retries < 0):
            raise UsageError(f"@task on {self.name}: retries must be an int >= 0, not {retries!r}.")
        self.retries = retries
        self.computing_units = 1
        self.memory_size = 0.0
        self.processors: list = []
        self.invoker = "python"       # external-program decorators change this
        self.invoker_cfg: dict = {}
        self.prepare = None           # call-time hook (api.calltime.build), None = hot path
        self.gang = False             # placed by runtime.gang (several nodes, GPUs)
        self.options: dict | None = {"time_out": self.time_out} if self.time_out else None
        self.digest: bytes | None = None
        self.payload: bytes | None = None
        self.stats_n = 0              # completed runs, for prefetch decisions
        self.stats_mean = 0.0

    def where(self, pname: str) -> str:
        return f"task {self.name}, parameter '{pname}'"

    def set_constraints(self, computing_units: Any = None, memory_size: Any = None,
                        processors: Any = None) -> None:
        if computing_units is not None:
            self.computing_units = computing_units
        if memory_size is not None:
            self.memory_size = memory_size
        if processors is not None:
            self.processors = processors
        self._refresh_options()

    def _refresh_options(self) -> None:
        opts: dict[str, Any] = {}
        if self.time_out:
            opts["time_out"] = self.time_out
        if self.invoker != "python":
            opts["invoker"] = self.invoker
            opts["cfg"] = self.invoker_cfg
        self.options = opts or None
        from .calltime import build
        self.prepare = build(self)

    @property
    def exclusive(self) -> bool:
        """Tasks the node must start on an idle slot (timeouts, several units)."""
        return bool(self.time_out) or not isinstance(self.computing_units, int) \
            or self.computing_units != 1 or self.invoker != "python"


def _parse_returns(func: Callable, returns: Any, name: str) -> tuple[int, bool]:
    """Return (number of futures, whether the call returns a tuple of them)."""
    if returns is None:
        try:
            hint = typing.get_type_hints(func).get("return")
        except Exception:
            hint = None
        if hint is not None and typing.get_origin(hint) is tuple:
            args = typing.get_args(hint)
            if args and args[-1] is not Ellipsis and len(args) > 1:
                return len(args), True
        return 1, False
    if isinstance(returns, bool):
        raise UsageError(f"@task on {name}: returns={returns!r}: give a type, a count or a tuple of types.")
    if isinstance(returns, int):
        if returns < 0:
            raise UsageError(f"@task on {name}: returns={returns} must be >= 0.")
        return (returns, True) if returns > 1 else (1, False)
    if isinstance(returns, (tuple, list)):
        if len(returns) == 0:
            return 1, False
        return (len(returns), True) if len(returns) > 1 else (1, False)
    if isinstance(returns, (type, str)) or typing.get_origin(returns) is not None:
        if typing.get_origin(returns) is tuple:
            args = typing.get_args(returns)
            if len(args) > 1 and args[-1] is not Ellipsis:
                return len(args), True
        return 1, False
    raise UsageError(f"@task on {name}: returns={returns!r}: give a type (returns=int), "
                     f"a count (returns=2) or a tuple of types (returns=(int, str)).")


def _parse_priority(priority: Any, name: str) -> int:
    if priority is None or priority is False:
        return 0
    if priority is True:
        return 1
    if isinstance(priority, int):
        return priority
    raise UsageError(f"@task on {name}: priority must be a bool or an int, not {priority!r}.")


def _parse_timeout(time_out: Any, name: str) -> float | None:
    if time_out is None or time_out == 0:
        return None
    if isinstance(time_out, (int, float)) and not isinstance(time_out, bool) and time_out > 0:
        return float(time_out)
    raise UsageError(f"@task on {name}: time_out must be a number of seconds > 0, not {time_out!r}.")


class TaskFunction:
    """The callable a ``@task`` decoration returns."""

    def __init__(self, func: Callable, spec: TaskSpec) -> None:
        self.__wrapped__ = func
        self.spec = spec
        spec.wrapper = self
        functools.update_wrapper(self, func)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if in_worker():      # a task called inside a task runs inline
            return self.__wrapped__(*args, **kwargs)
        rt = _current._current
        if rt is None:
            rt = _current.get_or_start()
        return rt.submit(self.spec, args, kwargs)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self.__call__, obj)

    def __reduce__(self):
        # Inside a worker a task function is just its function: by reference
        # when its module can be imported there, else by value (cloudpickle).
        spec = self.spec
        mod = sys.modules.get(spec.module)
        if spec.module != "__main__" and mod is not None and "<locals>" not in spec.name:
            obj = mod
            for part in spec.name.split("."):
                obj = getattr(obj, part, None)
            if obj is self:
                return (_load_task_function, (spec.module, spec.name))
        return (_plain_function, (self.__wrapped__,))

    def __repr__(self) -> str:
        return f"<taskflow task {self.spec.name}>"


def _plain_function(func: Callable) -> Callable:
    return func


def _load_task_function(module: str, qualname: str) -> Callable:
    import importlib
    obj: Any = importlib.import_module(module)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj.__wrapped__ if isinstance(obj, TaskFunction) else obj


def task(_func: Callable | None = None, *, returns: Any = None, priority: Any = False,
         time_out: Any = None, on_failure: str = "RETRY", retries: int | None = None,
         **directions: Any) -> Any:
    """Declare a task. ``@task`` or ``@task(returns=int, x=INOUT, f=FILE_IN, ...)``."""

    def decorate(func: Callable) -> TaskFunction:
        if isinstance(func, TaskFunction):
            raise UsageError(f"@task applied twice to {func.spec.name}.")
        if not callable(func):
            raise UsageError(f"@task must decorate a function, not {func!r}.")
        name = getattr(func, "__qualname__", repr(func))
        sig = inspect.signature(func)
        pnames = [p for p in sig.parameters]
        params: dict[str, Param] = {}
        for key, value in directions.items():
            if key in _RESERVED:
                continue
            if key not in sig.parameters:
                close = difflib.get_close_matches(key, pnames, n=1)
                hint = f" Did you mean '{close[0]}'?" if close else ""
                raise UsageError(
                    f"@task on {name}: '{key}' is not a parameter of {name}"
                    f"({', '.join(pnames)}).{hint} Keyword arguments of @task other than "
                    f"returns/priority/time_out/on_failure/retries name parameters.")
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


def spec_of(obj: Any) -> TaskSpec | None:
    return obj.spec if isinstance(obj, TaskFunction) else None


__all__ = ["task", "TaskFunction", "TaskSpec", "IN"]
