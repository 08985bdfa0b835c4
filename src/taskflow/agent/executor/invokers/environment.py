"""What a task that is not a plain Python call sees of the resources it holds (node side)."""
from __future__ import annotations

import os

from ....wire.invocation import Invocation
from . import spawn


def node_env(inv: Invocation) -> dict[str, str]:
    """What every external task sees about the resources it holds."""
    place = inv.placement
    if place is None:
        hosts: tuple[str, ...] = (os.environ.get("TASKFLOW_NODE_LABEL", "localhost"),)
    elif inv.action is None:        # @multinode: one name per group (several on a node)
        hosts = tuple(h for h, (_, k) in zip(place.node_hosts, place.node_names)
                      for _ in range(k))
    else:
        hosts = place.node_hosts
    threads = str(inv.threads or 1)
    env = {"TASKFLOW_NUM_NODES": str(len(hosts)), "TASKFLOW_HOSTNAMES": ",".join(hosts),
           "TASKFLOW_NUM_THREADS": threads, "OMP_NUM_THREADS": threads}
    if place is not None:
        env["TASKFLOW_NODES"] = ",".join(f"{n}:{k}" for n, k in place.node_names)
    for k in ("NUM_NODES", "HOSTNAMES", "NUM_THREADS"):
        env["COMPSS_" + k] = env["TASKFLOW_" + k]
    if place is not None:
        if place.gpus:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(map(str, place.gpus))
        if place.resources:     # named resources (taskflow.api.resources reads them)
            env["TASKFLOW_RESOURCES"] = place.resources
        if place.variant >= 0:
            env["TASKFLOW_VARIANT"] = str(place.variant)
    return env


def program_env(inv: Invocation) -> dict[str, str]:
    """The node's environment, what the task holds and PYTHONPATH: built once per set of
    values (spawn.environment) and shared, so a caller that changes it copies it first.

    A task on this node alone (no placement) is told only its threads: the environment
    kept for them is taken as it is (node_env's values depend on nothing else then)."""
    if inv.placement is None:
        env = spawn.kept_environment(inv.threads)
        if env is not None:
            return env
        extra = node_env(inv)
        return spawn.environment(tuple(extra.items()), extra, inv.threads)
    extra = node_env(inv)
    return spawn.environment(tuple(extra.items()), extra)


_LOG_PREFIX: dict[str, str] = {}     # log folder -> the job files' path up to the task id


def log_base_of(inv: Invocation, tid: int) -> str | None:
    log_dir = inv.log_dir
    if not log_dir:
        return None
    prefix = _LOG_PREFIX.get(log_dir)
    if prefix is None:
        if len(_LOG_PREFIX) > 64:
            _LOG_PREFIX.clear()
        prefix = _LOG_PREFIX[log_dir] = os.path.join(log_dir, "job")
    return prefix + str(tid)
