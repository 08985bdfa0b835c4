"""The monitor's DAG picture, laid out and drawn in Python as SVG (:mod:`..observe.svgdag`).

Up to :data:`TASK_GRAPH_MAX` tasks the picture is the task graph: one box
per task (``id="task-<id>"``), layered top to bottom with arrows from
producer to consumer (an arrow another path implies is left out; a wide
layer wraps into rows). Above that a picture of every task is a wall of
specks, so it is the graph of task *names*, like Snakemake's rule graph: one
box per name (``id="name-<i>"``) with its counts by state, an arrow where a
task of one name read what a task of the other wrote. The page colours the
boxes by state, rewrites the counts as the run goes on, and shows boxes too
small to read as coloured cells (``dagview.js``); it asks for a new layout
only when tasks were added.

The page gives its panel's shape (``aspect``, width / height): the layers
wrap so the drawing fills the panel. No Graphviz: the picture never waits for
a subprocess and never depends on a system package. A layout is cached per
run, kind, size and shape (a few entries).
"""
from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from ..journal.reader import Journal
from ..observe import dotgraph, svgdag
from ..observe.dotgraph import reduce_edges

TASK_GRAPH_MAX = dotgraph.TASK_GRAPH_MAX   # tasks drawn one by one; above, the graph of names
_CACHE_SIZE = 8

__all__ = ["Layouts", "TASK_GRAPH_MAX", "aspect_of", "reduce_edges"]


def aspect_of(text: str | None) -> float:
    """The panel's width / height from the page's query (1.6 when absent or not a number)."""
    try:
        value = float(text) if text else 1.6
    except ValueError:
        return 1.6
    return min(max(value, 0.1), 10.0) if value == value else 1.6


class Layouts:
    """The DAG pictures of the runs, cached by (run directory, kind, size, panel shape)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()

    def get(self, j: Journal, colours: dict[str, str], aspect: float = 1.6) -> dict[str, Any]:
        """{"kind": "tasks" | "names", "svg": ..., "names": [...], "tasks": n}."""
        total = j.counts()["total"]
        kind = "tasks" if total <= TASK_GRAPH_MAX else "names"
        shape = round(aspect, 1)
        if kind == "tasks":
            tasks = j.tasks()
            edges = j.edges()
            key: tuple[Any, ...] = (j.run_dir, kind, len(tasks), len(edges), shape)
        else:
            names = sorted(j.counts_by_name())
            name_edges = j.name_edges()
            key = (j.run_dir, kind, tuple(names), len(name_edges), shape)
        with self._lock:
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                return hit
        if kind == "tasks":
            ids = {t["id"] for t in tasks}
            drawn = reduce_edges([e for e in edges if e[0] in ids and e[1] in ids])
            calls = [e for e in j.children() if e[0] in ids and e[1] in ids]
            svg = svgdag.task_svg(tasks, drawn, colours, aspect=shape, calls=calls)
            out = {"kind": kind, "svg": svg, "tasks": len(tasks), "names": [],
                   "hidden_edges": len(set(edges)) - len(drawn)}
        else:
            svg = svgdag.name_svg(names, {}, {e: 1 for e in name_edges}, colours, live=True,
                                  aspect=shape)
            out = {"kind": kind, "svg": svg, "tasks": total, "names": names}
        with self._lock:
            self._cache[key] = out
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return out
