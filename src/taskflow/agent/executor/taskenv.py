"""What every task sees of the resources it holds, as PyCOMPSs tasks see them (node side).

Under ``taskflow run --compat pycompss`` (the master's HELLO says
``compss_env``) every task gets ``COMPSS_NUM_NODES``, ``COMPSS_HOSTNAMES``
(its node, named as the resources description names it: ``localhost`` for
the local machine), and ``COMPSS_NUM_THREADS`` / ``OMP_NUM_THREADS`` /
``TASKFLOW_NUM_THREADS`` = the computing units it holds. The node's part is
set once in the agent (its executors inherit it); the units are set by the
executor when a task holds another number of them than the one before it
(one integer comparison per task). Tasks on several nodes get theirs from
their placement (:mod:`taskflow.agent.executor.invokers.environment`).

The agent also installs the ``pycompss`` import alias then, so every
executor it forks resolves ``import pycompss...`` whatever task it runs
first: an application module that imports ``pycompss`` can reach a node in
the arguments of the layer's own tasks (a replicated call's copies carry the
function and its ``self``) before any PyCOMPSs task function loads the alias
there. The layer is named, not imported, here: the node imports it only in a
PyCOMPSs run.
"""
from __future__ import annotations

import importlib
import os

ON = False          # set in the agent before it forks its executors
_units = 0          # the units the environment says now

# The thread pools of numeric libraries (OpenMP, OpenBLAS, MKL): one thread per executor
# unless the environment says otherwise. Unset, each library starts one thread per core in
# every executor: on 2 cores, 2 executors ran numpy's 700 x 700 products 5-20x slower than
# one sequential loop (benchmarks/blocked_linalg.py). Dask's workers and Ray's do the same.
BLAS_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
DEFAULTED: list[str] = []   # the ones this executor set (programs it starts do not see them)


def compss_environment(label: str) -> None:
    """The node's part (agent, before the executors are forked)."""
    global ON
    os.environ.update({"COMPSS_NUM_NODES": "1", "COMPSS_HOSTNAMES": label,
                       "TASKFLOW_NODE_LABEL": label})
    # the master decided already: the alias even over a real PyCOMPSs on this node
    importlib.import_module("taskflow.compat.importhook").install(force=True)
    ON = True


def units(n: int) -> None:
    """The task about to run holds ``n`` computing units (0: an @IO task)."""
    global _units
    if n != _units:
        _units = n
        s = str(n or 1)
        env = os.environ
        env["COMPSS_NUM_THREADS"] = env["OMP_NUM_THREADS"] = env["TASKFLOW_NUM_THREADS"] = s
        if "OMP_NUM_THREADS" in DEFAULTED:      # (the task's own now: its programs see it)
            DEFAULTED.remove("OMP_NUM_THREADS")


def one_thread_each() -> None:
    """In a new executor, before anything imports a numeric library: ``BLAS_VARS`` not set
    in the environment are set to 1 (read by the libraries when they load)."""
    env = os.environ
    for var in BLAS_VARS:
        if var not in env:
            env[var] = "1"
            DEFAULTED.append(var)
