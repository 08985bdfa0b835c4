"""``pycompss.api.multinode``: ``@multinode(computing_nodes=N)``.

A Python task given N node groups of the ``computing_units`` of its
``@constraint`` (N a number, ``$ENV`` or a module global's name, read at every
call); groups share a node that has room for several, as in COMPSs. It runs
once, on the first node, and sees ``COMPSS_NUM_NODES`` (N),
``COMPSS_HOSTNAMES`` (one name per group) and ``COMPSS_NUM_THREADS``.
"""
from __future__ import annotations

from typing import Any

from ....api.external import attach
from ...external import counts_per_call, normalize
from ...calls.taskfn import task_function

SUPPORTED = ("computing_nodes", "processes_per_node")


class multinode:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kw = normalize("multinode", kwargs, SUPPORTED)
        self.cfg = {"computing_nodes": kw.get("computing_nodes", 1), "fail_by_exit_value": True,
                    "groups": True}

    def __call__(self, target: Any) -> Any:
        tf = task_function(target, "@multinode")
        attach(tf, "multinode", counts_per_call(tf, self.cfg), outputs=True)
        return tf


MultiNode = multinode
Multinode = multinode
