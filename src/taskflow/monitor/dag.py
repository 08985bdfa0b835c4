"""The monitor's DAG picture: laid out by Graphviz on the server, as SVG (:mod:`..observe.dotgraph`).

Up to :data:`TASK_GRAPH_MAX` tasks the picture is the task graph: one box
per task (``id="task-<id>"``), layered top to bottom with arrows from
producer to consumer (an arrow another path implies is left out; a wide
fan-out wraps into a block, :mod:`..observe.layout`). Above
that a picture of every task is unreadable (and ``dot`` slow), so it is the
graph of task *names*, like Snakemake's rule
graph: one box per name (``id="name-<i>"``) with its counts by state, an
arrow where a task of one name read what a task of the other wrote. The page
colours the boxes by state and rewrites the counts as the run goes on; it
asks for a new layout only when tasks were added.

A layout is cached per run, kind and size (a few entries), and ``dot`` gets
a time limit: a picture never holds a request thread for long.
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from ..journal.reader import Journal
from ..observe import dotgraph
from ..observe.dotgraph import NoGraphviz, reduce_edges

TASK_GRAPH_MAX = dotgraph.TASK_GRAPH_MAX   # tasks drawn one by one; above, the graph of names
DOT_TIMEOUT = 30.0         # s
_CACHE_SIZE = 8

__all__ = ["Layouts", "NoGraphviz", "TASK_GRAPH_MAX", "reduce_edges"]


class Layouts:
    """The DAG pictures of the runs, cached by (run directory, kind, size)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()

    def get(self, j: Journal, colours: dict[str, str]) -> dict[str, Any]:
        """{"kind": "tasks" | "names", "svg": ..., "names": [...], "tasks": n}."""
        total = j.counts()["total"]
        kind = "tasks" if total <= TASK_GRAPH_MAX else "names"
        if kind == "tasks":
            tasks = j.tasks()
            edges = j.edges()
            key: tuple[Any, ...] = (j.run_dir, kind, len(tasks), len(edges))
        else:
            names = sorted(j.counts_by_name())
            name_edges = j.name_edges()
            key = (j.run_dir, kind, tuple(names), len(name_edges))
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        if kind == "tasks":
            ids = {t["id"] for t in tasks}
            drawn = reduce_edges([e for e in edges if e[0] in ids and e[1] in ids])
            calls = [e for e in j.children() if e[0] in ids and e[1] in ids]
            text, engine = dotgraph.task_dot(tasks, drawn, colours, legend=False, calls=calls)
            svg = dotgraph.render(text, engine, timeout=DOT_TIMEOUT)
            out = {"kind": kind, "svg": svg, "tasks": len(tasks), "names": [],
                   "hidden_edges": len(set(edges)) - len(drawn)}
        else:
            text = dotgraph.name_dot(names, {}, {e: 1 for e in name_edges}, colours, live=True)
            svg = dotgraph.render(text, timeout=DOT_TIMEOUT)
            out = {"kind": kind, "svg": svg, "tasks": total, "names": names}
        with self._lock:
            self._cache[key] = out
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return out
