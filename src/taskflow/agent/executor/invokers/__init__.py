"""Node-side invokers: how a task that is not a plain Python call runs.

``agent.executor.loop.run_task`` calls :func:`run` when the task's options hold an
:class:`~taskflow.wire.invocation.Invocation` (@binary, @mpi, @ompss,
@multinode, @container, @http, @workflow, hooks, GPUs); the plain Python path
never comes here. The invocation's action decides, by its type, which module's
``invoke`` runs it (imported at its first use):

  Program    one program, argv from the parameters or the ``args`` template
             (@ompss: OMP_NUM_THREADS / NX_ARGS from the computing units): :mod:`.program`
  Mpi        ``runner`` over a hostfile of the nodes the scheduler chose: :mod:`.mpi`
  Http       a REST call (PyCOMPSs's @http): :mod:`.http`
  Workflow   a nested ``taskflow run`` of a script (PyCOMPSs's @compss): :mod:`.workflow`
  None       the Python function itself, with TASKFLOW_* / COMPSS_* describing its
             nodes (@multinode, GPUs, hooks)

With a container (@container), the program, each MPI rank or the function
runs in a fresh one (:mod:`.container`). Any of them may have hooks: a
prolog, an epilog, DIRECTORY_OUT parameters the task makes itself
(:mod:`.hooks`).
"""
from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any, Callable

from ....wire.invocation import Http, Invocation, Mpi, Program, Workflow
from . import command, spawn
from .environment import log_base_of, node_env, program_env

if TYPE_CHECKING:
    from ....wire.messages import LineWire


def run(inv: Invocation, func: Any, args: list[Any], kw: dict[str, Any],
        logs: list[LineWire], tid: int) -> Any:
    """Run task ``tid`` as ``inv`` says; return the task's value."""
    hooks_cfg = inv.hooks
    if hooks_cfg is None:
        return _invoke(inv, func, args, kw, logs, tid)
    from . import hooks
    renamed = None
    if hooks_cfg.renamed:           # PyCOMPSs Keep_rename: the files under COMPSs's names
        from .renames import cleanup, rename
        args, kw, renamed = rename(hooks_cfg.renamed, func, args, kw)
    try:
        values = command.bind(func, args, kw, order_of(inv))
        env = program_env(inv)
        log_base = log_base_of(inv, tid)
        hooks.before(hooks_cfg, values, env, logs, log_base)
        result = _invoke(inv, func, args, kw, logs, tid)
        hooks.after(hooks_cfg, values, env, logs, log_base)
    finally:
        if renamed is not None:
            cleanup(renamed)
    return result


def order_of(inv: Invocation) -> tuple[str, ...]:
    """The parameter names in order, for binding a call whose signature is not at hand."""
    action = inv.action
    if action is None:
        return ()
    if type(action) is Http:
        return action.order
    return action.line.order      # type: ignore[union-attr]  # Program, Mpi, Workflow


Runner = Callable[[Any, Invocation, Any, list[Any], dict[str, Any], "list[LineWire]", int], Any]
# the module whose ``invoke`` runs each kind of action, imported at its first use (an
# executor that runs only Python tasks never loads them)
_MODULES: dict[type, str] = {Program: "program", Mpi: "mpi", Http: "http", Workflow: "workflow"}
_RUNNERS: dict[type, Runner] = {}


def _invoke(inv: Invocation, func: Any, args: list[Any], kw: dict[str, Any],
            logs: list[LineWire], tid: int) -> Any:
    action = inv.action
    if action is None:
        if inv.container is not None:
            from . import container
            return container.run_python(func, args, kw, inv, logs, tid)
        spawn.python_ran()
        return _with_env(node_env(inv), func, args, kw)
    kind = type(action)
    runner = _RUNNERS.get(kind)
    if runner is None:
        name = _MODULES.get(kind)
        if name is None:
            raise TypeError(f"task {tid}: no invoker for {kind.__name__}")
        runner = _RUNNERS[kind] = importlib.import_module(f"{__name__}.{name}").invoke
    return runner(action, inv, func, args, kw, logs, tid)


def _with_env(extra: dict[str, str], func: Any, args: list[Any], kw: dict[str, Any]) -> Any:
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        return func(*args, **kw)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
