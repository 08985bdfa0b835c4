"""What a node's executors import while the run starts: its task functions' modules.

A task function that lives in an importable module goes to the nodes by
reference (``api.task.TaskFunction.__reduce__``): the executor that gets its
first task imports that module then, and with it taskflow's task API, before
the task can run (20-40 ms on a 2-core machine, most of a first result's time
on the node). The master names those modules in its HELLO (``preload``:
:func:`taskflow.graph.spec.task_modules`); the agent keeps the list here
before it forks its executors, and each executor imports them right after
its fork, while the master is still busy with the node's READY and its first
dispatch. An import that fails here is let be: the first task that needs the
module imports it again and fails with its own name, as it would have.
"""
from __future__ import annotations

import importlib

MODULES: list[str] = []     # from the master's HELLO (agent.Agent._set_up)


def warm_up() -> None:
    """Import :data:`MODULES` (in a freshly forked executor, before its first frame)."""
    for name in MODULES:
        try:
            importlib.import_module(name)
        except BaseException:  # noqa: BLE001 - the task that needs it says why (above)
            pass
