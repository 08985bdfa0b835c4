"""What @binary, @mpi, @ompss, @multinode, @workflow and @http share when a task is declared.

:func:`attach` checks the decorator's arguments and records them in the spec as
the kind's typed declaration (:mod:`taskflow.graph.decl`, ``spec.declare_program``),
with ``processes`` / ``processes_per_node`` / ``computing_nodes`` values compiled as
expressions (:mod:`taskflow.graph.expr`). What they become for one call (``$VAR``
expanded, expressions evaluated, binaries checked, the typed records the node
reads) is :mod:`taskflow.runtime.calltime`.
"""
from __future__ import annotations

from typing import Any

from ..errors import UsageError
from ..graph.decl import COUNTS, KINDS, command_line
from ..graph.expr import Expr
from ..wire.template import PLACEHOLDER
from .hints import did_you_mean
from .task import TaskFunction


def check_arguments(deco: str, given: dict[str, Any], mandatory: tuple[str, ...],
                    supported: tuple[str, ...]) -> None:
    known = mandatory + supported
    unknown = sorted(set(given) - set(known))
    if unknown:         # first: a misspelt mandatory argument is also missing
        raise UsageError(f"@{deco}: unknown argument {unknown[0]!r}."
                         f"{did_you_mean(unknown[0], known)} Supported: {', '.join(known)}.")
    missing = [a for a in mandatory if given.get(a) is None]
    if missing:
        raise UsageError(f"@{deco}: missing mandatory argument(s) {', '.join(missing)}.")


def attach(target: Any, deco: str, cfg: dict[str, Any], outputs: bool = False) -> TaskFunction:
    """Make the task ``target`` run through the ``deco`` invoker, declared by the values
    ``cfg`` (the fields of the kind's record in :mod:`taskflow.graph.decl`, and ``args``).

    ``outputs``: the invoker gives the task's values itself (an mpi4py function's
    per-rank values, a REST answer), so several are allowed.
    """
    if not isinstance(target, TaskFunction):
        raise UsageError(f"@{deco} must be placed above @task (order: @constraint -> @{deco} "
                         f"-> @task), not on {getattr(target, '__qualname__', target)!r}.")
    spec = target.spec
    if spec.invoker != "python":
        raise UsageError(f"@{deco} on {spec.name}: the task already runs as @{spec.invoker}; "
                         f"use one external-program decorator per task.")
    if spec.container is not None and (deco == "multinode" or (deco == "mpi" and not cfg.get("binary"))):
        raise UsageError(f"@{deco} on {spec.name}: this task cannot run in the @container put below "
                         f"it; @container goes above @{deco} (and @mpi needs binary= there).")
    if spec.nout > 1 and not outputs:
        raise UsageError(f"@{deco} on {spec.name}: an external program gives one value (its "
                         f"exit code); use returns=int or no returns.")
    names = list(spec.signature.parameters)
    tmpl = cfg.get("args")
    if tmpl is not None:
        if not isinstance(tmpl, str):
            raise UsageError(f"@{deco} on {spec.name}: args must be a string template like "
                             f"'-i {{{{infile}}}} -n {{{{n}}}}', not {tmpl!r}.")
        for n in PLACEHOLDER.findall(tmpl):
            if n not in names:
                raise UsageError(f"@{deco} on {spec.name}: args names {{{{{n}}}}}, which is not "
                                 f"a parameter of {spec.name}({', '.join(names)}).")
    fbev = cfg.get("fail_by_exit_value")
    if not isinstance(fbev, bool):
        raise UsageError(f"@{deco} on {spec.name}: fail_by_exit_value must be True or False, "
                         f"not {fbev!r}.")
    if not isinstance(cfg.get("keep_background", False), bool):
        raise UsageError(f"@{deco} on {spec.name}: keep_background must be True or False, "
                         f"not {cfg['keep_background']!r}.")
    for key in ("binary", "working_dir", "flags", "runner"):
        v = cfg.get(key)
        if v is not None and not isinstance(v, str):
            raise UsageError(f"@{deco} on {spec.name}: {key} must be a string, not {v!r}.")
    line = command_line(tmpl, spec.params, names, spec.varargs, spec.varkw)
    values: dict[str, Any] = {key: Expr(v, f"@{deco} on {spec.name}: {key}", names)
                              if key in COUNTS and v is not None else v
                              for key, v in cfg.items() if key != "args"}
    spec.declare_program(KINDS[deco](line=line, **values))
    return target


__all__ = ["attach", "check_arguments"]
