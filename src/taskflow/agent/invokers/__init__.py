"""Node-side invokers: how a task that is not a plain Python call runs.

``agent.executor.run_task`` calls :func:`run` when the task's options hold an
:class:`~taskflow.wire.invocation.Invocation` (@binary, @mpi, @ompss,
@multinode, @container, @http, @workflow, hooks, GPUs); the plain Python path
never comes here. The invocation's action decides, by its type:

  Program    one program, argv from the parameters or the ``args`` template
             (@ompss: OMP_NUM_THREADS / NX_ARGS from the computing units)
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

import os
from typing import TYPE_CHECKING, Any, Callable

from ...wire.invocation import Http, Invocation, Mpi, Program, Workflow
from . import command, process, spawn

if TYPE_CHECKING:
    from ...wire.messages import LineWire


def node_env(inv: Invocation) -> dict[str, str]:
    """What every external task sees about the resources it holds."""
    place = inv.placement
    hosts = place.node_hosts if place is not None else ("localhost",)
    threads = str(inv.threads or 1)
    env = {"TASKFLOW_NUM_NODES": str(len(hosts)), "TASKFLOW_HOSTNAMES": ",".join(hosts),
           "TASKFLOW_NUM_THREADS": threads}
    if place is not None:
        env["TASKFLOW_NODES"] = ",".join(f"{n}:{k}" for n, k in place.node_names)
    for k in ("NUM_NODES", "HOSTNAMES", "NUM_THREADS"):
        env["COMPSS_" + k] = env["TASKFLOW_" + k]
    if place is not None and place.gpus:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, place.gpus))
    return env


def run(inv: Invocation, func: Any, args: list[Any], kw: dict[str, Any],
        logs: list[LineWire], tid: int) -> Any:
    """Run task ``tid`` as ``inv`` says; return the task's value."""
    hooks_cfg = inv.hooks
    if hooks_cfg is None:
        return _invoke(inv, func, args, kw, logs, tid)
    from . import hooks
    values = command.bind(func, args, kw, order_of(inv))
    env = _program_env(inv)
    log_base = _log_base(inv, tid)
    hooks.before(hooks_cfg, values, env, logs, log_base)
    result = _invoke(inv, func, args, kw, logs, tid)
    hooks.after(hooks_cfg, values, env, logs, log_base)
    return result


def order_of(inv: Invocation) -> tuple[str, ...]:
    """The parameter names in order, for binding a call whose signature is not at hand."""
    action = inv.action
    if action is None:
        return ()
    if type(action) is Http:
        return action.order
    return action.line.order      # type: ignore[union-attr]  # Program, Mpi, Workflow


def _program_env(inv: Invocation) -> dict[str, str]:
    """The node's environment, what the task holds and PYTHONPATH: built once per set of
    values (spawn.environment) and shared, so a caller that changes it copies it first."""
    extra = node_env(inv)
    return spawn.environment(tuple(extra.items()), extra)


def _log_base(inv: Invocation, tid: int) -> str | None:
    log_dir = inv.log_dir
    return os.path.join(log_dir, f"job{tid}") if log_dir else None


Runner = Callable[[Any, Invocation, Any, list[Any], dict[str, Any], "list[LineWire]", int], Any]


def _invoke(inv: Invocation, func: Any, args: list[Any], kw: dict[str, Any],
            logs: list[LineWire], tid: int) -> Any:
    action = inv.action
    if action is None:
        if inv.container is not None:
            from . import container
            return container.run_python(func, args, kw, inv, logs, tid)
        spawn.python_ran()
        return _with_env(node_env(inv), func, args, kw)
    runner = _RUNNERS.get(type(action))
    if runner is None:
        raise TypeError(f"task {tid}: no invoker for {type(action).__name__}")
    return runner(action, inv, func, args, kw, logs, tid)


def _program(action: Program, inv: Invocation, func: Any, args: list[Any],
             kw: dict[str, Any], logs: list[LineWire], tid: int) -> Any:
    values = command.bind(func, args, kw, action.line.order)
    env = _program_env(inv)
    cwd = command.working_dir(action.working_dir, values)
    log_base = _log_base(inv, tid)
    tail, streams = command.build_args(action.line, values, env, cwd)
    if action.openmp:
        env = dict(env)
        env["OMP_NUM_THREADS"] = env["TASKFLOW_NUM_THREADS"]
        env["NX_ARGS"] = (env.get("NX_ARGS", "") +
                          f" --smp-workers={env['TASKFLOW_NUM_THREADS']}").strip()
    if inv.container is not None:
        from . import container
        return container.run_program(action, inv, values, tail, streams, cwd, dict(env), logs,
                                     log_base, tid)
    argv = [command.resolve_binary(action.binary, cwd, env)] + tail
    return process.run(argv, cwd, env, streams, logs, log_base, action.fail_by_exit_value)


def _mpi(action: Mpi, inv: Invocation, func: Any, args: list[Any], kw: dict[str, Any],
         logs: list[LineWire], tid: int) -> Any:
    from . import mpi
    values = command.bind(func, args, kw, action.line.order)
    env = _program_env(inv)
    cwd = command.working_dir(action.working_dir, values)
    tail, streams = command.build_args(action.line, values, env, cwd)
    return mpi.run(action, inv, func, args, kw, values, tail, streams, cwd, dict(env), logs,
                   _log_base(inv, tid), tid)


def _http(action: Http, inv: Invocation, func: Any, args: list[Any], kw: dict[str, Any],
          logs: list[LineWire], tid: int) -> Any:
    from . import http
    return http.run(action, command.bind(func, args, kw, action.order), logs)


def _workflow(action: Workflow, inv: Invocation, func: Any, args: list[Any],
              kw: dict[str, Any], logs: list[LineWire], tid: int) -> Any:
    from . import workflow
    values = command.bind(func, args, kw, action.line.order)
    env = _program_env(inv)
    cwd = command.working_dir(action.working_dir, values)
    return workflow.run(action, inv, values, cwd, env, logs, _log_base(inv, tid), tid)


_RUNNERS: dict[type, Runner] = {Program: _program, Mpi: _mpi, Http: _http,
                                Workflow: _workflow}


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
