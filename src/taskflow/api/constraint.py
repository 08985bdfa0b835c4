"""``@constraint``: what a task needs from the node that runs it.

Stacks above ``@task`` (PyCOMPSs order) or below it. The core takes plain
numbers: ``computing_units`` (slots held while it runs) and ``memory_size``
(GB). A task no node can ever fit fails when it is called.
"""
from __future__ import annotations

from typing import Any, Callable

from ..errors import UsageError
from .task import TaskFunction

_KNOWN = {"computing_units", "memory_size", "processors", "memory_type", "storage_size",
          "storage_type", "operating_system_type", "host_queues", "app_software"}


def _check(name: str, computing_units: Any, memory_size: Any) -> None:
    if computing_units is not None and (not isinstance(computing_units, int)
                                        or isinstance(computing_units, bool)
                                        or computing_units < 1):
        raise UsageError(f"@constraint on {name}: computing_units must be an int >= 1, "
                         f"not {computing_units!r}")
    if memory_size is not None and (not isinstance(memory_size, (int, float))
                                    or isinstance(memory_size, bool) or memory_size < 0):
        raise UsageError(f"@constraint on {name}: memory_size (GB) must be a number >= 0, "
                         f"not {memory_size!r}")


def constraint(computing_units: Any = None, memory_size: Any = None, **others: Any) -> Callable:
    unknown = set(others) - _KNOWN
    if unknown:
        raise UsageError(f"@constraint: unknown argument(s) {sorted(unknown)}; known: "
                         f"computing_units, memory_size, processors, ...")

    def decorate(target: Any) -> Any:
        name = getattr(target, "__qualname__", repr(target))
        _check(name, computing_units, memory_size)
        values = {"computing_units": computing_units, "memory_size": memory_size,
                  "processors": others.get("processors")}
        if isinstance(target, TaskFunction):
            target.spec.set_constraints(**values)
            return target
        if callable(target):
            target.__taskflow_constraint__ = values
            return target
        raise UsageError(f"@constraint must decorate a task or a function, not {target!r}")

    return decorate
