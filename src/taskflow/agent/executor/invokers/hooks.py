"""Steps around a task's call on the node: prolog, epilog, directories the task makes.

The invocation's :class:`~taskflow.wire.invocation.Hooks` (set on the master
from the task's declaration) may hold

- ``prolog`` / ``epilog``: a :class:`~taskflow.wire.invocation.HookProgram`, a
  program run before / after the task in its working directory, ``{{name}}``
  in ``args`` replaced by the task's parameters; a prolog that fails (by
  default) fails the task before it starts, an epilog's failure is only
  logged unless ``fail_by_exit_value`` says otherwise;
- ``fresh_dirs``: DIRECTORY_OUT parameters the task creates itself
  (PyCOMPSs): the empty directory taskflow prepared is removed first.

Their output lines join the task's log.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from ....wire.invocation import CommandLine, HookProgram, Hooks
from . import command, process

if TYPE_CHECKING:
    from ....wire.messages import LineWire


def before(hooks: Hooks, values: dict[str, Any], env: dict[str, str],
           logs: list[LineWire], log_base: str | None) -> None:
    for name in hooks.fresh_dirs:
        path = values.get(name)
        if isinstance(path, str) and os.path.isdir(path) and not os.listdir(path):
            os.rmdir(path)
    if hooks.prolog is not None:
        _program(hooks.prolog, "prolog", values, env, logs, log_base, True)


def after(hooks: Hooks, values: dict[str, Any], env: dict[str, str],
          logs: list[LineWire], log_base: str | None) -> None:
    if hooks.epilog is not None:
        _program(hooks.epilog, "epilog", values, env, logs, log_base, False)


def _program(hook: HookProgram, what: str, values: dict[str, Any], env: dict[str, str],
             logs: list[LineWire], log_base: str | None, fail_default: bool) -> int:
    cwd = command.working_dir(hook.working_dir, values)
    words = hook.words
    if hook.bash and words is None:         # (the master resolves them; a fallback)
        from ....wire.template import template_words
        words = template_words(hook.args or "", env)
    tail, _ = command.build_args(CommandLine(hook.args or "", {}, words=words), values, env,
                                 cwd)
    argv = [command.resolve_binary(hook.binary, cwd, env)] + tail
    fail = hook.fail_by_exit_value
    base = f"{log_base}.{what}" if log_base else None
    return process.run(argv, cwd, env, {}, logs, base, fail_default if fail is None else fail)
