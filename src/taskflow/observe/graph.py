"""The run's graph: the task graph, or the graph of task names, as DOT and SVG.

``taskflow graph`` draws one box per task up to :data:`.dotgraph.TASK_GRAPH_MAX`
tasks and the graph of task names above (``--tasks`` / ``--names`` choose);
:mod:`.dotgraph` says what a box looks like and how the size is bounded.
The SVG is Graphviz's where it is installed and works, else the same graph
laid out and drawn in Python (:mod:`.svgdag`): a run never lacks its picture.
"""
from __future__ import annotations

import os
from typing import Any

import networkx as nx

from ..journal.reader import Journal
from . import dotgraph, layout, palette, svgdag

SVG_MAX_TASKS = 5000     # above this even the wrapped layout is a wall of boxes: .dot only
KINDS = ("auto", "tasks", "names")


def build(j: Journal) -> nx.DiGraph:
    """A DiGraph of the run: nodes are task ids with the journal's columns."""
    g = nx.DiGraph()
    for t in j.tasks():
        g.add_node(t["id"], **t)
    for a, b in j.edges():
        if a in g and b in g:
            g.add_edge(a, b)
    return g


def colours(names: list[str]) -> dict[str, str]:
    """A distinct colour per task name (:mod:`.palette`)."""
    return palette.colours(names)


def to_dot(g: nx.DiGraph, title: str = "taskflow") -> str:
    """DOT of every task of ``g`` (edges another path implies left out)."""
    tasks = [d for _, d in sorted(g.nodes(data=True))]
    col = colours([t.get("name", "") for t in tasks])
    return dotgraph.task_dot(tasks, dotgraph.reduce_edges(g.edges()), col, title)[0]


def choose(kind: str, ntasks: int, limit: int = dotgraph.TASK_GRAPH_MAX) -> str:
    """``tasks`` or ``names`` for ``kind`` (``auto``: tasks up to ``limit``)."""
    if kind not in KINDS:
        raise ValueError(f"graph kind must be one of {', '.join(KINDS)}, not {kind!r}")
    if kind == "auto":
        return "tasks" if ntasks <= limit else "names"
    return kind


def graph_dot(j: Journal, kind: str = "auto", limit: int = dotgraph.TASK_GRAPH_MAX,
              tasks: list[dict[str, Any]] | None = None) -> tuple[str, str, str]:
    """(kind drawn, DOT, Graphviz engine) of the run's graph."""
    tasks = j.tasks() if tasks is None else tasks
    edges = j.edges()
    kind = choose(kind, len(tasks), limit)
    title = j.run().get("run_id", "taskflow")
    by_name = j.counts_by_name()
    col = colours(list(by_name))
    if kind == "tasks":
        ids = {t["id"] for t in tasks}
        drawn = dotgraph.reduce_edges(e for e in edges if e[0] in ids and e[1] in ids)
        calls = [e for e in j.children() if e[0] in ids and e[1] in ids]
        text, engine = dotgraph.task_dot(tasks, drawn, col, title, calls=calls)
        return kind, text, engine
    names = sorted(by_name)
    return kind, dotgraph.name_dot(names, by_name, dotgraph.name_edge_counts(tasks, edges),
                                   col), "dot"


def python_svg(j: Journal, kind: str, tasks: list[dict[str, Any]]) -> str:
    """The SVG of ``kind`` (``tasks`` or ``names``) drawn without Graphviz (:mod:`.svgdag`),
    wrapped to a landscape page's shape (:data:`.layout.ASPECT`)."""
    edges = j.edges()
    by_name = j.counts_by_name()
    col = colours(list(by_name))
    if kind == "tasks":
        ids = {t["id"] for t in tasks}
        drawn = dotgraph.reduce_edges(e for e in edges if e[0] in ids and e[1] in ids)
        calls = [e for e in j.children() if e[0] in ids and e[1] in ids]
        return svgdag.task_svg(tasks, drawn, col, aspect=layout.ASPECT, calls=calls)
    return svgdag.name_svg(sorted(by_name), by_name, dotgraph.name_edge_counts(tasks, edges),
                           col, aspect=layout.ASPECT)


def graph_svg(j: Journal, kind: str = "auto", limit: int = dotgraph.TASK_GRAPH_MAX,
              tasks: list[dict[str, Any]] | None = None) -> tuple[str, str, str]:
    """(kind drawn, SVG, what drew it: ``graphviz`` or ``python``) of the run's graph."""
    tasks = j.tasks() if tasks is None else tasks
    drawn, text, engine = graph_dot(j, kind, limit, tasks)
    return (drawn,) + _draw(j, drawn, text, engine, tasks)


def _draw(j: Journal, kind: str, text: str, engine: str, tasks: list[dict[str, Any]]
          ) -> tuple[str, str]:
    """(SVG, ``graphviz`` or ``python``): Graphviz's drawing of ``text``, or where Graphviz
    is not installed, fails or times out, the same graph drawn in Python."""
    try:
        return dotgraph.render(text, engine), "graphviz"
    except (dotgraph.NoGraphviz, RuntimeError):
        return python_svg(j, kind, tasks), "python"


def write_graph(run_dir: str, out_dir: str | None = None, svg: bool = True,
                kind: str = "auto") -> dict[str, str]:
    """Write ``graph.dot`` and ``graph.svg`` (Graphviz's drawing, else taskflow's); return
    the paths, with ``kind`` (``tasks`` or ``names``) and ``svg_error`` when there is no
    SVG (above :data:`SVG_MAX_TASKS` tasks drawn one by one)."""
    out_dir = out_dir or run_dir
    os.makedirs(out_dir, exist_ok=True)
    with Journal(run_dir) as j:
        tasks = j.tasks()
        drawn, text, engine = graph_dot(j, kind, tasks=tasks)
        paths = {"dot": os.path.join(out_dir, "graph.dot"), "kind": drawn}
        with open(paths["dot"], "w") as f:
            f.write(text)
        if not svg:
            return paths
        if drawn == "tasks" and len(tasks) > SVG_MAX_TASKS:
            paths["svg_error"] = (f"{len(tasks)} tasks: too many boxes to draw one by one; "
                                  f"--names draws the graph of task names ({paths['dot']} "
                                  "has every task)")
            return paths
        drawing, _ = _draw(j, drawn, text, engine, tasks)
    paths["svg"] = os.path.join(out_dir, "graph.svg")
    with open(paths["svg"], "w") as f:
        f.write(drawing)
    return paths


def critical_path(g: nx.DiGraph) -> tuple[float, list[int]]:
    """The longest chain of dependent tasks by run time: (seconds, task ids)."""
    best: dict[int, tuple[float, int | None]] = {}
    for n in nx.topological_sort(g):
        d = g.nodes[n]
        dur = max(0.0, (d.get("t_end") or 0) - (d.get("t_start") or 0)) \
            if d.get("t_start") else 0.0
        prev = max(((best[p][0], p) for p in g.predecessors(n)), default=(0.0, None))
        best[n] = (prev[0] + dur, prev[1])
    if not best:
        return 0.0, []
    end = max(best, key=lambda n: best[n][0])
    length = best[end][0]
    path = []
    cur: int | None = end
    while cur is not None:
        path.append(cur)
        cur = best[cur][1]
    return length, path[::-1]
