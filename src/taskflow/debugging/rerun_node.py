"""``taskflow rerun ... --node NODE``: the task again on one node of a cluster file.

Only that node's agent is started (the cluster file read, its other nodes and
its Slurm section left out), and it is given the task as a master gives it:
its function (FUNC), the values its references name (DATA), the task (TASKS).
Its RESULTS say how it ended; its programs' lines (LOG) are printed as they
come. The node must share the master's filesystem (the files the task reads
are the run's; what it writes goes to ``<run dir>/reruns/``); a node without
it (``shared_fs: false``) is refused, as is ``--pdb`` (the debugger would be
on the node).
"""
from __future__ import annotations

import hashlib
import json
import os
import select
import sys
import time
from typing import Any

from ..errors import UsageError
from ..journal.reader import Journal
from ..providers.cluster import load_cluster
from ..wire import messages as M
from ..wire import protocol as P

START_TIMEOUT = 60.0        # s for the node's agent to answer


class NodeError(Exception):
    """A task's error as its node reported it (its type by name, its text, its traceback)."""

    def __init__(self, info: M.ErrorInfo) -> None:
        super().__init__(info.message)
        self.type_name = info.type_name
        self.traceback = info.traceback


def cluster_of(run_dir: str, given: str | None) -> str:
    """The cluster file: ``given``, else the one the run was started with (its argv)."""
    if given is not None:
        return given
    try:
        with Journal(run_dir) as j:
            row = j.run()
        argv, cwd = json.loads(row.get("argv") or "[]"), row.get("cwd") or ""
    except Exception as exc:  # noqa: BLE001 - say which run could not say
        raise UsageError(f"taskflow rerun --node: the run's journal cannot be read ({exc}); "
                         f"give --cluster FILE") from None
    for i, a in enumerate(argv):
        if a == "--cluster" and i + 1 < len(argv):
            return os.path.join(cwd, argv[i + 1])
        if isinstance(a, str) and a.startswith("--cluster="):
            return os.path.join(cwd, a.split("=", 1)[1])
    raise UsageError("taskflow rerun --node: the run was not given a cluster file; "
                     "give --cluster FILE")


def run_on_node(node_name: str, cluster: str, rec: dict[str, Any], msg: M.TaskMsg,
                refs: list[M.RefWire], scratch: str) -> BaseException | None:
    """Run the task on ``node_name``; its error (a :class:`NodeError`) or None."""
    cfg = load_cluster(cluster)
    names = [n.name for n in cfg.nodes]
    chosen = [n for n in cfg.nodes if n.name == node_name]
    if not chosen:
        raise UsageError(f"taskflow rerun --node {node_name}: {cluster} has no such node "
                         f"(its nodes: {', '.join(names) or 'none'})")
    if not chosen[0].local and chosen[0].shared_fs is False:
        raise UsageError(f"taskflow rerun --node {node_name}: the node does not share this "
                         f"machine's filesystem (shared_fs: false): not yet supported")
    cfg.nodes, cfg.slurm = chosen, None
    (provider,) = cfg.providers()
    config: M.Hello = {"sys_path": rec["sys_path"], "cwd": rec["cwd"],
                       "data_dir": os.path.join(scratch, "data"),
                       "run_id": f"rerun-{msg.task_id}-{int(time.time())}"}
    try:
        handles = provider.start(config, START_TIMEOUT)
        (node,) = [h for h in handles if h.name == node_name] or handles[:1]
        node.channel.set_blocking(True)
        digest = hashlib.blake2b(rec["func"], digest_size=16).digest()
        P.write_all(node.channel, P.encode(M.FUNC, M.Func(digest, rec["func"])))
        if rec["values"]:
            P.write_all(node.channel, P.encode(M.DATA, list(rec["values"].items())))
        task = tuple(msg._replace(digest=digest, refs=refs or None))
        P.write_all(node.channel, P.encode(M.TASKS, [task]))
        return _result(node, msg.task_id)
    finally:
        provider.stop()


def _result(node: Any, tid: int) -> BaseException | None:
    while True:
        select.select([node.rfd], [], [], 1.0)
        msgs = node.read()
        if msgs is None:
            raise UsageError(f"taskflow rerun --node {node.name}: the node's agent ended "
                             f"before the task did ({node.lost_reason or 'its stream closed'})")
        for op, body in msgs:
            if op == M.LOG:
                for _, _, level, text in body:
                    print(f"[{node.name}] {text}", file=sys.stderr if level == "STDERR"
                          else sys.stdout)
            elif op == M.RESULTS:
                for rtid, status, _, error, _ in body:
                    if rtid != tid:
                        continue
                    if status == M.OK:
                        return None
                    if error is None:
                        return NodeError(M.ErrorInfo("Failed", f"status {status}", "", None))
                    return NodeError(error)
            elif op == M.FATAL:
                raise UsageError(f"taskflow rerun --node {node.name}: {body}")
