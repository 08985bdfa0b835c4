"""``pycompss.api.task``: ``@task`` with PyCOMPSs's semantics.

Arguments (both spellings of every keyword; the camelCase ones are the
older PyCOMPSs spellings):

- ``returns``: a type, a tuple of types, a count, a string holding a count,
  the name of a module global, ``"value_of(param.attr)"``, a class, ``FILE``;
  left out, the function's type hints or ``return`` statements decide
  (:mod:`taskflow.compat.calls.returns`). Several values come back as a list, none
  as ``None``. A call may override it: ``f(x, returns=3)``.
- ``priority``, ``time_out``/``timeOut``, ``on_failure`` (RETRY, FAIL,
  IGNORE, CANCEL_SUCCESSORS), ``target_direction``/``targetDirection`` (IN
  makes ``self`` read-only), ``isModifier=False`` (the same),
  ``varargs_type``/``varargsType`` (the direction of every ``*args`` value,
  e.g. FILE_IN: the files are dependencies like any FILE_IN parameter).
- ``is_replicated``/``isReplicated``: the task runs once on every node.
- ``is_distributed``/``isDistributed``, ``cache_returns``, ``numba*``,
  ``tracing_hook``: placement and performance hints with no effect here;
  accepted and recorded.
- every other keyword names a parameter: a constant of
  :mod:`pycompss.api.parameter`, its dictionary form or ``Parameter(...)``. A
  keyword that names no parameter is ignored, as PyCOMPSs stores it and never
  looks it up (one close to a parameter's name is warned about).
- a generator function may be a task: its generator travels back as its
  values and is a generator again on the master (:mod:`taskflow.compat.generators`).

``self`` of a task method is INOUT unless declared otherwise.
"""
from __future__ import annotations

import difflib
import inspect
import logging
from typing import Any, Callable

from ....errors import UsageError
from ....graph.param import COLLECTION_KIND, DIRECTORY_KIND, OBJECT_KIND
from ....graph.spec import TaskSpec
from ...calls import returns as R
from ...calls.decl import Decl
from ...calls.taskfn import CompatTaskFunction, file_params
from .parameter import renamed, to_native

log = logging.getLogger("taskflow.compat")
LEGACY = {"targetDirection": "target_direction", "isReplicated": "is_replicated",
          "isDistributed": "is_distributed", "varargsType": "varargs_type",
          "timeOut": "time_out", "cacheReturns": "cache_returns", "onFailure": "on_failure",
          "isModifier": "is_modifier", "computingNodes": "computing_nodes",
          "processesPerNode": "processes_per_node", "isReduce": "is_reduce",
          "chunkSize": "chunk_size", "tracingHook": "tracing_hook",
          "numbaFlags": "numba_flags", "numbaSignature": "numba_signature",
          "numbaDeclaration": "numba_declaration"}
RESERVED = {"returns", "priority", "time_out", "on_failure", "defaults", "target_direction",
            "is_modifier", "is_replicated", "is_distributed", "varargs_type", "cache_returns",
            "computing_nodes", "processes_per_node", "is_reduce", "chunk_size", "tracing_hook",
            "numba", "numba_flags", "numba_signature", "numba_declaration", "retries"}
RECORDED = ("is_distributed", "cache_returns", "tracing_hook", "numba", "numba_flags",
            "numba_signature", "numba_declaration", "computing_nodes", "processes_per_node")


def task(*args: Any, **kwargs: Any) -> Callable[..., Any]:
    """``@task(...)`` (or bare ``@task``): see the module docstring."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return _Declaration({})(args[0])
    if args:
        raise UsageError(f"@task takes keyword arguments only, got {args!r}.")
    return _Declaration(kwargs)


Task = task      # PyCOMPSs exports both names


class _Declaration:
    def __init__(self, kwargs: dict[str, Any]) -> None:
        self.reserved: dict[str, Any] = {}
        self.directions: dict[str, Any] = {}
        for key, value in kwargs.items():
            k = LEGACY.get(key, key)
            if k in RESERVED:
                self.reserved[k] = value
            else:
                self.directions[key] = value

    def __call__(self, func: Callable[..., Any]) -> CompatTaskFunction:
        if isinstance(func, CompatTaskFunction):
            raise UsageError(f"@task applied twice to {func.spec.name}.")
        if not callable(func) or isinstance(func, type):
            raise UsageError(f"@task must decorate a function or a method, not {func!r}.")
        name = getattr(func, "__qualname__", repr(func))
        res = self.reserved
        sig = inspect.signature(func)
        names = list(sig.parameters)
        for p in [p for p in self.directions if p not in sig.parameters]:
            close = difflib.get_close_matches(p, names, n=1)
            if close:           # PyCOMPSs ignores it; a likely typo is worth a word
                log.warning("@task on %s: %s= names no parameter and is ignored (did you mean "
                            "%s?)", name, p, close[0])
        params = {p: to_native(v, f"@task on {name}, parameter '{p}'")
                  for p, v in self.directions.items() if p in sig.parameters}
        modifier = res.get("is_modifier", True) is not False
        target = res.get("target_direction")
        if target is not None:
            modifier = to_native(target, f"@task on {name}: target_direction").direction != "IN"
        if names and names[0] == "self" and "self" not in params and modifier:
            params["self"] = to_native("INOUT", "self")        # PyCOMPSs: self is INOUT
        varargs = next((p.name for p in sig.parameters.values()
                        if p.kind is p.VAR_POSITIONAL), None)
        vtype = res.get("varargs_type")
        vparam = None
        if vtype is not None:
            vparam = to_native(vtype, f"@task on {name}: varargs_type")
            if varargs is None:
                raise UsageError(f"@task on {name}: varargs_type={vtype!r} but {name} has no "
                                 f"*args parameter.")
            if vparam.kind == OBJECT_KIND and vparam.direction == "IN":
                vparam = None                     # the default: nothing to track
        if varargs and varargs in params:
            raise UsageError(f"@task on {name}: '*{varargs}' takes its direction from "
                             f"varargs_type=, not from {varargs}=.")
        rets = R.parse(res.get("returns"), func, name)
        on_failure = str(res.get("on_failure", "RETRY")).upper()
        spec = TaskSpec(func, params, max(rets.fixed, 1) if rets.dynamic is None else 1,
                        res.get("priority", False), res.get("time_out"), on_failure,
                        res.get("retries"))
        decl = Decl()
        decl.returns = rets
        decl.file_params = file_params(spec)
        decl.on_failure_defaults = dict(res.get("defaults") or {})
        decl.varargs = vparam
        decl.written = frozenset(n for n, p in spec.params.items()
                                 if p.kind == OBJECT_KIND and p.writes and n != "self")
        colls = [n for n, p in spec.params.items() if p.kind == COLLECTION_KIND]
        decl.collections = frozenset(colls)
        # (a collection of files is never "immutable values": its leaves are paths to write)
        decl.written_collections = frozenset(n for n in colls if spec.params[n].writes
                                             and spec.params[n].elem_kind == OBJECT_KIND)
        decl.replicated = bool(res.get("is_replicated", False))
        recorded = {k: _plain(res[k]) for k in RECORDED if k in res and res[k]}
        if recorded:
            spec.record_hints(**recorded)
        fresh = [n for n, p in spec.params.items()
                 if p.kind == DIRECTORY_KIND and p.direction == "OUT"]
        if fresh:            # PyCOMPSs: the task makes its DIRECTORY_OUT itself
            spec.add_hooks(fresh_dirs=tuple(fresh))
        keep = tuple(p for p, v in self.directions.items()
                     if p in spec.params and renamed(v, f"@task on {name}, parameter '{p}'"))
        if keep:             # Keep_rename=True: the files under COMPSs's version names
            spec.add_hooks(renamed=keep)
        tf = CompatTaskFunction(func, spec, decl)
        pending = getattr(func, "__compat_constraint__", None)
        if pending:                          # @constraint written below @task
            from .constraint import apply
            apply(tf, *pending)
        return tf


def _plain(v: Any) -> Any:
    return v if isinstance(v, (int, float, str, bool)) else repr(v)


__all__ = ["task", "Task"]
