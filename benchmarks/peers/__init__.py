"""Runtime adapters: one module per runtime, all with the same interface.

Each adapter module exposes::

    NAME: str                      # short name used on the command line
    LABEL: str                     # row label in the table
    SKIP: frozenset[str]           # workloads that make no sense for it
    def version() -> str | None
    def start(workers: int) -> Handle   # see benchmarks.workloads.Handle
    def stop(handle) -> None

``start`` must return a usable (not necessarily warmed-up) handle; the harness
warms it up with ``workloads.warm_up`` before timing anything.
"""
from __future__ import annotations

import importlib
import os
import sys
import time
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import psutil

# psutil is imported where it is used: the executors of E's first task import this
# package (the task functions live in it), and psutil on that path cost ~10 ms of E.

ADAPTERS: dict[str, str] = {
    "taskflow": "benchmarks.peers.taskflow_peer",
    "taskflow-executor": "benchmarks.peers.tfexec_peer",
    "dask": "benchmarks.peers.dask_peer",
    "parsl": "benchmarks.peers.parsl_peer",
    "ppe": "benchmarks.peers.ppe_peer",
    "seq": "benchmarks.peers.seq_peer",
}


def load(name: str) -> ModuleType:
    """Import the adapter for ``name`` (ImportError if its runtime is missing)."""
    return importlib.import_module(ADAPTERS[name])


def descendants() -> set[int]:
    """Pids of every live descendant of this process, except multiprocessing's helpers.

    The resource tracker and forkserver are started on demand by whichever
    runtime first needs them, serve the whole master process and exit with
    it; they are not any runtime's leftovers.
    """
    import psutil

    try:
        pids = {p.pid for p in psutil.Process(os.getpid()).children(recursive=True)}
    except psutil.Error:
        return set()
    return pids - _mp_helpers()


def _mp_helpers() -> set[int]:
    helpers = set()
    for modname, obj, attr in (
        ("multiprocessing.resource_tracker", "_resource_tracker", "_pid"),
        ("multiprocessing.forkserver", "_forkserver", "_forkserver_pid"),
    ):
        mod = sys.modules.get(modname)
        pid = getattr(getattr(mod, obj, None), attr, None)
        if pid:
            helpers.add(pid)
    return helpers


def reap(before: set[int], token: str | None = None, grace: float = 5.0) -> list[int]:
    """Terminate, by pid, processes this adapter left behind.

    Candidates are descendants that did not exist in ``before`` and, if
    ``token`` is given (a path unique to this run, e.g. Parsl's run dir),
    orphaned processes whose command line contains it (Parsl's worker pool is
    started through a shell and may be re-parented to init). Returns the pids
    that had to be signalled.
    """
    import psutil

    procs: dict[int, psutil.Process] = {}
    deadline = time.monotonic() + grace
    # Give a clean shutdown a moment to finish on its own first.
    while True:
        procs = {}
        for pid in descendants() - before:
            try:
                procs[pid] = psutil.Process(pid)
            except psutil.Error:
                pass
        if token:
            for p in psutil.process_iter(["pid", "cmdline"]):
                try:
                    if p.pid != os.getpid() and token in " ".join(p.info["cmdline"] or []):
                        procs[p.pid] = p
                except psutil.Error:
                    pass
        alive = [p for p in procs.values() if _alive(p)]
        if not alive or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    if not alive:
        return []
    for p in alive:
        try:
            p.terminate()
        except psutil.Error:
            pass
    _, still = psutil.wait_procs(alive, timeout=3)
    for p in still:
        try:
            p.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(still, timeout=3)
    return [p.pid for p in alive]


def _alive(p: psutil.Process) -> bool:
    import psutil

    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False
