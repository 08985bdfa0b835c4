"""``@multinode``: a Python task given several nodes.

Order: ``@constraint`` -> ``@multinode`` -> ``@task``. The task holds
``computing_units`` slots (``@constraint``, default 1) on each of
``computing_nodes`` nodes and runs once, on the first of them, seeing
``TASKFLOW_NUM_NODES``, ``TASKFLOW_HOSTNAMES`` (comma-separated, one per
node), ``TASKFLOW_NUM_THREADS`` and the same under the ``COMPSS_`` names for
ported code.
"""
from __future__ import annotations

from typing import Any, Callable

from .external import attach, check_arguments

MANDATORY = ("computing_nodes",)
SUPPORTED = ()
DEPRECATED = ("computingNodes",)


def multinode(computing_nodes: int | str | None = None, **others: object) -> Callable[..., Any]:
    """Declare a task that needs ``computing_nodes`` nodes (an int, ``"$VAR"`` or an
    expression of the task's parameters).

    Example (``taskflow run --local-nodes 2 script.py``)::

        import os
        from taskflow import multinode, task, wait_on

        @multinode(computing_nodes=2)
        @task(returns=str)
        def hosts() -> str:
            return os.environ["TASKFLOW_NUM_NODES"]

        print(wait_on(hosts()))                           # 2
    """
    check_arguments("multinode", dict(others, computing_nodes=computing_nodes), MANDATORY,
                    SUPPORTED)
    cfg = {"computing_nodes": computing_nodes, "fail_by_exit_value": True}
    return lambda target: attach(target, "multinode", cfg)
