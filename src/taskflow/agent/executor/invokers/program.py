"""The Program invoker (node side): @binary and @ompss, one program whose exit code is the value.

``@ompss`` sees ``OMP_NUM_THREADS`` and ``NX_ARGS="--smp-workers=N"`` set to the
computing units the task holds. With a container the program runs in one
(:mod:`.container`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ....wire.invocation import Invocation, Program
from . import command, process
from .environment import log_base_of, program_env

if TYPE_CHECKING:
    from ....wire.messages import LineWire


def invoke(action: Program, inv: Invocation, func: Any, args: list[Any], kw: dict[str, Any],
        logs: list[LineWire], tid: int) -> Any:
    """Run the program; its exit code is the value (non-zero: ProgramFailed, unless
    ``fail_by_exit_value`` is off)."""
    values = command.bind(func, args, kw, action.line.order)
    env = program_env(inv)
    cwd = command.working_dir(action.working_dir, values)
    log_base = log_base_of(inv, tid)
    tail, streams = command.build_args(action.line, values, env, cwd)
    if action.line.env:             # parameters given as environment variables
        env = dict(env)
        env.update((n, str(values[n])) for n in action.line.env if values.get(n) is not None)
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
    return process.run(argv, cwd, env, streams, logs, log_base, action.fail_by_exit_value,
                       action.keep_background)
