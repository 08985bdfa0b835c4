"""Node-side invokers: how a task that is not a plain Python call runs.

``nodes.executor.run_task`` calls :func:`run` when the task's options name
an invoker (set by @binary, @mpi, @ompss, @multinode, or a GPU constraint);
the plain Python path never comes here.

  binary     one program, argv from the parameters or the ``args`` template
  ompss      the same, with OMP_NUM_THREADS / NX_ARGS from the computing units
  mpi        ``runner`` over a hostfile of the nodes the scheduler chose
  multinode  the Python function, with TASKFLOW_* / COMPSS_* describing its nodes
  pyenv      the Python function with extra environment (CUDA_VISIBLE_DEVICES)
  container  the Python function in a container (@container above @task)
  http       a REST call (PyCOMPSs's @http): :mod:`.http`
  workflow   a nested ``taskflow run`` of a script (PyCOMPSs's @compss): :mod:`.workflow`

A task whose options hold ``container`` (@container) runs its program, or
each MPI rank, in a fresh container (:mod:`.container`).
Any kind may have ``options["hooks"]``: a prolog, an epilog, DIRECTORY_OUT
parameters the task makes itself (:mod:`.hooks`).
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from . import command, process, spawn

if TYPE_CHECKING:
    from ...wire.messages import LineWire


def node_env(options: dict[str, Any]) -> dict[str, str]:
    """What every external task sees about the resources it holds."""
    hosts = options.get("node_hosts") or ["localhost"]
    threads = str(options.get("threads") or 1)
    env = {"TASKFLOW_NUM_NODES": str(len(hosts)), "TASKFLOW_HOSTNAMES": ",".join(hosts),
           "TASKFLOW_NUM_THREADS": threads}
    names = options.get("node_names")
    if names:
        env["TASKFLOW_NODES"] = ",".join(f"{n}:{k}" for n, k in names)
    for k in ("NUM_NODES", "HOSTNAMES", "NUM_THREADS"):
        env["COMPSS_" + k] = env["TASKFLOW_" + k]
    env.update(options.get("env") or {})
    return env


def run(kind: str, func: Any, args: list[Any], kw: dict[str, Any], options: dict[str, Any],
        logs: list[LineWire], tid: int) -> Any:
    """Run task ``tid`` through invoker ``kind``; return the task's value."""
    hooks_cfg = options.get("hooks")
    if not hooks_cfg:
        return _invoke(kind, func, args, kw, options, logs, tid)
    from . import hooks
    values = command.bind(func, args, kw, options.get("cfg") or {})
    env = _program_env(options)
    log_base = _log_base(options, tid)
    hooks.before(hooks_cfg, values, env, logs, log_base)
    result = _invoke(kind, func, args, kw, options, logs, tid)
    hooks.after(hooks_cfg, values, env, logs, log_base)
    return result


def _program_env(options: dict[str, Any]) -> dict[str, str]:
    """The node's environment, what the task holds and PYTHONPATH: built once per set of
    values (spawn.environment) and shared, so a caller that changes it copies it first."""
    extra = node_env(options)
    return spawn.environment(tuple(extra.items()), extra)


def _log_base(options: dict[str, Any], tid: int) -> str | None:
    log_dir = options.get("log_dir")
    return os.path.join(log_dir, f"job{tid}") if log_dir else None


def _invoke(kind: str, func: Any, args: list[Any], kw: dict[str, Any], options: dict[str, Any],
            logs: list[LineWire], tid: int) -> Any:
    if kind in ("multinode", "pyenv"):
        spawn.python_ran()
        return _with_env(node_env(options), func, args, kw)
    if kind == "container":
        from . import container
        return container.run_python(func, args, kw, options, logs, tid)
    cfg = options["cfg"]
    values = command.bind(func, args, kw, cfg)
    if kind == "http":
        from . import http
        return http.run(cfg, values, logs)
    env = _program_env(options)
    cwd = command.working_dir(cfg, values)
    log_base = _log_base(options, tid)
    fail = cfg.get("fail_by_exit_value", True)
    if kind == "workflow":
        from . import workflow
        return workflow.run(cfg, options, values, cwd, env, logs, log_base, fail, tid)
    tail, streams = command.build_args(cfg, values, env, cwd)
    if kind == "mpi":
        from . import mpi
        return mpi.run(cfg, options, func, args, kw, tail, streams, cwd, dict(env), logs,
                       log_base, fail)
    if kind == "ompss":
        env = dict(env)
        env["OMP_NUM_THREADS"] = env["TASKFLOW_NUM_THREADS"]
        env["NX_ARGS"] = (env.get("NX_ARGS", "") +
                          f" --smp-workers={env['TASKFLOW_NUM_THREADS']}").strip()
    elif kind != "binary":
        raise ValueError(f"unknown invoker {kind!r}")
    if options.get("container"):
        from . import container
        return container.run_program(kind, cfg, options, func, args, kw, tail, streams, cwd,
                                     dict(env), logs, log_base, fail, tid)
    argv = [command.resolve_binary(cfg["binary"], cwd, env)] + tail
    return process.run(argv, cwd, env, streams, logs, log_base, fail)


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
