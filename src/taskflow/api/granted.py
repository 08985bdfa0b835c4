"""``task_resources()``: inside a running task, the named resources it was given.

The node puts them in the task's environment (``agent.executor.invokers.environment``):
``TASKFLOW_RESOURCES`` (JSON: ``{"gpu": {"amount": 0.25, "indices": [0]},
"license": {"amount": 1}}``), ``TASKFLOW_VARIANT`` (the index of the variant
taken, when the task gave ``variants=``), ``TASKFLOW_NUM_THREADS`` (its
cores) and ``CUDA_VISIBLE_DEVICES`` (its GPUs). A program reads those; a
Python task may call this.
"""
from __future__ import annotations

import json
import os
from typing import Any, NamedTuple


class TaskResources(NamedTuple):
    """What the calling task was given (outside a task asking for resources: nothing)."""

    variant: int | None               # the index in variants= (None: no variants)
    cores: int                        # its computing units
    given: dict[str, dict[str, Any]]  # name -> {"amount": a, "indices": [...] (devices)}


def task_resources() -> TaskResources:
    """The variant, cores and named resources the running task holds (its environment).

    Example (nodes that declare ``resources: {license: 2}`` in the cluster file)::

        from taskflow import constraint, task, task_resources, wait_on

        @constraint(computing_units=1, resources={"license": 1})
        @task(returns=dict)
        def licensed() -> dict[str, dict[str, object]]:
            return task_resources().given

        print(wait_on(licensed()))                        # {'license': {'amount': 1}}
    """
    env = os.environ
    variant = env.get("TASKFLOW_VARIANT")
    given = env.get("TASKFLOW_RESOURCES")
    return TaskResources(int(variant) if variant else None,
                         int(env.get("TASKFLOW_NUM_THREADS") or 1),
                         json.loads(given) if given else {})
