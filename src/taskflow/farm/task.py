"""The program task of a map: one ``@binary`` declaration that every item calls.

The task is declared with the public decorators (``@constraint`` ->
``@binary`` -> ``@task``) on a function made for this command line, whose
parameters are the item's (:class:`.items.ItemPlan`): so its calls are
recorded, versioned, logged and resumed as any ``@binary`` task's are. The
function is made from text (its parameter names depend on the command) in a
module of its own name, so it travels to the nodes by value and its key (what
``--resume`` compares) is the same in every run of the same command.
"""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

from .items import ENV, ItemPlan

MODULE = "taskflow_map"         # not importable: the function goes to the nodes by value


def map_task(plan: ItemPlan, cpus: int | None, memory_gb: float | None,
             time_out: float | None, retries: int | None,
             resources: dict[str, int | float] | None) -> Any:
    """The task function every item of ``plan`` calls (a ``TaskFunction``)."""
    from ..api.binary import binary
    from ..api.constraint import constraint
    from ..api.task import task
    name = os.path.basename(plan.program) or "map"
    func = _function(name, plan.names)
    kw: dict[str, Any] = dict(plan.directions, returns=int)
    if time_out is not None:
        kw["time_out"] = time_out
    if retries is not None:
        kw["retries"] = retries
    fn = binary(binary=plan.program, args=plan.args)(task(**kw)(func))   # "": no argument
    cons: dict[str, Any] = {}
    if cpus is not None:
        cons["computing_units"] = cpus
    if memory_gb is not None:
        cons["memory_size"] = memory_gb
    if resources:
        cons["resources"] = resources
    if cons:
        fn = constraint(**cons)(fn)
    spec = fn.spec
    program = spec.program
    assert program is not None
    spec.declare_program(replace(program, line=program.line._replace(env=ENV)))
    return fn


def _function(name: str, params: list[str]) -> Any:
    """A function of these parameters whose body is never run (a program runs instead)."""
    ns: dict[str, Any] = {"__name__": MODULE}
    exec(compile(f"def item({', '.join(params)}):\n    pass\n", f"<{MODULE}>", "exec"), ns)
    func = ns["item"]
    func.__qualname__ = func.__name__ = name
    func.__module__ = MODULE
    return func
