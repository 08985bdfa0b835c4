"""CPU time by process of a local run, for per-task costs that a loaded machine moves
less than it moves throughput.

:func:`cpu_split` reads, in the program running a local :class:`taskflow.Runtime`, the
CPU seconds (user + system) so far of: the master's loop thread, its nested-calls
thread, the rest of the master (the program's thread, the journal and event threads),
the node agent, its executors, and the journal's writer process. :func:`per_task` turns
two readings into microseconds per task. Processes and threads are told apart by what
they are (a thread's name, a process's command line), so a process that started or
ended between the readings counts what it used in between as well as psutil sees it.
The journal's writer runs behind the run: a short workload (A's 10,000 no-ops take a
fraction of a second) leaves what it writes after the second reading out of its figure.
psutil reads CPU time in clock ticks (10 ms): divide by enough tasks.
"""
from __future__ import annotations

import threading

import psutil

# the master's threads reported on their own (taskflow's names: runtime/loop, nesting)
THREADS = {"taskflow-loop": "loop", "taskflow-nested": "nested"}


def cpu_split() -> dict[str, float]:
    """CPU seconds so far: ``loop``, ``nested``, ``master`` (the rest of the master),
    ``agent``, ``executors``, ``journal`` (and ``other`` children, if any)."""
    me = psutil.Process()
    names = {t.native_id: t.name for t in threading.enumerate()}
    out = dict.fromkeys(("loop", "nested", "master", "agent", "executors", "journal"), 0.0)
    total = sum(me.cpu_times()[:2])
    for t in me.threads():
        kind = THREADS.get(names.get(t.id, ""))
        if kind is not None:
            used = t.user_time + t.system_time
            out[kind] += used
            total -= used
    out["master"] = total
    for child in me.children(recursive=True):
        try:
            used = sum(child.cpu_times()[:2])
            cmd = " ".join(child.cmdline())
            parent = child.ppid()
        except psutil.Error:
            continue            # (ended meanwhile)
        if "journal" in cmd:
            kind = "journal"
        elif "taskflow.node" in cmd:
            kind = "agent" if parent == me.pid else "executors"
        else:
            kind = "other"
        out[kind] = out.get(kind, 0.0) + used
    return out


def per_task(before: dict[str, float], after: dict[str, float], tasks: int
             ) -> dict[str, float]:
    """Microseconds of CPU per task between two :func:`cpu_split` readings, by part, and
    their sum (``cpu_us``)."""
    parts = {f"cpu_us_{k}": (after[k] - before.get(k, 0.0)) / tasks * 1e6 for k in after}
    return {"cpu_us": sum(parts.values()), **parts}
