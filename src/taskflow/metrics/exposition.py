"""Runs' figures (:class:`.reading.Snapshot`) as Prometheus metric families and text.

Every family carries the run's id as the label ``run``; names and meanings are
listed in :data:`HELP` (docs/guide/record-outside.md says the same).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    HistogramMetricFamily)
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from .reading import BUCKETS, Snapshot

CONTENT_TYPE = CONTENT_TYPE_LATEST
HELP = {
    "taskflow_run_info": "The run: its state and taskflow's version (value 1).",
    "taskflow_run_start_time_seconds": "When the run started (Unix time).",
    "taskflow_tasks": "Tasks of the run by task name and state, as the journal has them.",
    "taskflow_task_duration_seconds": "Run time of the tasks that ended (DONE, FAILED), "
                                      "by task name.",
    "taskflow_node_slots_used": "Slots of a node held by running tasks.",
    "taskflow_node_slots_free": "Slots of a node not held.",
    "taskflow_nodes": "Nodes by state: up (joined, not lost) and lost.",
    "taskflow_task_read_bytes": "Bytes the measured tasks read (rchar), summed.",
    "taskflow_task_written_bytes": "Bytes the measured tasks wrote (wchar), summed.",
    "taskflow_journal_backlog_rows": "Task rows the journal's writer has not been handed yet.",
    "taskflow_master_resident_bytes": "Resident memory of the run's master process.",
    "taskflow_master_cpu_seconds": "CPU time (user + system) of the run's master process.",
}


def families(snaps: Iterable[Snapshot]) -> Iterator[Any]:
    """The metric families of these runs' snapshots."""
    def gauge(name: str, labels: list[str]) -> GaugeMetricFamily:
        return GaugeMetricFamily(name, HELP[name], labels=labels)

    info = gauge("taskflow_run_info", ["run", "state", "version"])
    start = gauge("taskflow_run_start_time_seconds", ["run"])
    tasks = gauge("taskflow_tasks", ["run", "name", "state"])
    hist = HistogramMetricFamily("taskflow_task_duration_seconds",
                                 HELP["taskflow_task_duration_seconds"], labels=["run", "name"])
    used = gauge("taskflow_node_slots_used", ["run", "node"])
    free = gauge("taskflow_node_slots_free", ["run", "node"])
    nodes = gauge("taskflow_nodes", ["run", "state"])
    rd = CounterMetricFamily("taskflow_task_read_bytes", HELP["taskflow_task_read_bytes"],
                             labels=["run"])
    wr = CounterMetricFamily("taskflow_task_written_bytes", HELP["taskflow_task_written_bytes"],
                             labels=["run"])
    backlog = gauge("taskflow_journal_backlog_rows", ["run"])
    rss = gauge("taskflow_master_resident_bytes", ["run"])
    cpu = CounterMetricFamily("taskflow_master_cpu_seconds", HELP["taskflow_master_cpu_seconds"],
                              labels=["run"])
    for s in snaps:
        r = s.run_id
        info.add_metric([r, s.state, s.version], 1)
        if s.t_start:
            start.add_metric([r], s.t_start)
        for (name, state), n in sorted(s.tasks.items()):
            tasks.add_metric([r, name, state], n)
        for name, d in sorted(s.durations.items()):
            cum, buckets = 0, []
            for le, n in zip((*[repr(b) for b in BUCKETS], "+Inf"), d.counts):
                cum += n
                buckets.append((le, cum))
            hist.add_metric([r, name], buckets, d.total)
        for node, (u, f) in sorted(s.slots.items()):
            used.add_metric([r, node], u)
            free.add_metric([r, node], f)
        for state, n in s.nodes.items():
            nodes.add_metric([r, state], n)
        rd.add_metric([r], s.bytes_read)
        wr.add_metric([r], s.bytes_written)
        if s.backlog is not None:
            backlog.add_metric([r], s.backlog)
        if s.master_rss is not None:
            rss.add_metric([r], s.master_rss)
        if s.master_cpu is not None:
            cpu.add_metric([r], s.master_cpu)
    yield from (info, start, tasks, hist, used, free, nodes, rd, wr, backlog, rss, cpu)


class _Collector:
    def __init__(self, read: Callable[[], Iterable[Snapshot]],
                 more: Callable[[], Iterable[Any]] | None) -> None:
        self.read = read
        self.more = more

    def collect(self) -> Iterator[Any]:
        yield from families(self.read())
        if self.more is not None:
            yield from self.more()


def render(read: Callable[[], Iterable[Snapshot]],
           more: Callable[[], Iterable[Any]] | None = None) -> bytes:
    """The text format of the snapshots ``read()`` gives (called once per scrape), and of
    the families ``more()`` gives."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(read, more))
    return generate_latest(registry)
