"""Steps around a task's call on the node: prolog, epilog, directories the task makes.

``options["hooks"]`` (set on the master from the task's declaration) may hold

- ``prolog`` / ``epilog``: ``{"binary", "args", "fail_by_exit_value"}``, a
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

from . import command, process

if TYPE_CHECKING:
    from ...wire.messages import LineWire


def before(hooks: dict[str, Any], values: dict[str, Any], env: dict[str, str],
           logs: list[LineWire], log_base: str | None) -> None:
    for name in hooks.get("fresh_dirs") or ():
        path = values.get(name)
        if isinstance(path, str) and os.path.isdir(path) and not os.listdir(path):
            os.rmdir(path)
    if hooks.get("prolog"):
        _program(hooks["prolog"], "prolog", values, env, logs, log_base, True)


def after(hooks: dict[str, Any], values: dict[str, Any], env: dict[str, str],
          logs: list[LineWire], log_base: str | None) -> None:
    if hooks.get("epilog"):
        _program(hooks["epilog"], "epilog", values, env, logs, log_base, False)


def _program(cfg: dict[str, Any], what: str, values: dict[str, Any], env: dict[str, str],
             logs: list[LineWire], log_base: str | None, fail_default: bool) -> int:
    cwd = command.working_dir(cfg, values)
    tail, _ = command.build_args({"args": cfg.get("args") or "", "params": {},
                                  "shell_words": cfg.get("shell_words", False)},
                                 values, env, cwd)
    argv = [command.resolve_binary(cfg["binary"], cwd, env)] + tail
    fail = cfg.get("fail_by_exit_value")
    base = f"{log_base}.{what}" if log_base else None
    return process.run(argv, cwd, env, {}, logs, base, fail_default if fail is None else fail)
