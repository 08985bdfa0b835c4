"""The task graph of a run as DOT (and SVG through graphviz ``dot``).

Tasks are coloured by function name (fill) and by state (outline and style):
DONE solid, FAILED thick red, CANCELLED dashed grey, not finished dotted.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from typing import Any

import networkx as nx

from . import palette

from ..journal.reader import Journal

STATE_STYLE = {
    "DONE": 'style=filled, color="#333333"',
    "FAILED": 'style="filled,bold", color="#d00000", penwidth=3',
    "CANCELLED": 'style="filled,dashed", color="#999999", fontcolor="#777777"',
    "INTERRUPTED": 'style="filled,dashed", color="#e6550d"',
}
PENDING_STYLE = 'style="filled,dotted", color="#333333"'
SVG_MAX_TASKS = 3000     # beyond this `dot` takes minutes; the .dot is still written


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
    """A distinct fill per task name (:mod:`.palette`)."""
    return palette.colours(names)


def to_dot(g: nx.DiGraph, title: str = "taskflow") -> str:
    col = colours([d.get("name", "") for _, d in g.nodes(data=True)])
    lines = [f'digraph "{_esc(title)}" {{', "  rankdir=TB;",
             '  node [shape=box, fontname="Helvetica", fontsize=10];']
    for n, d in g.nodes(data=True):
        name = d.get("name", "?")
        state = d.get("state", "")
        # two lines: each part escaped on its own, joined by DOT's own line break
        label = f"{_esc(name)}\\n#{n} {_esc(state.lower())}"
        style = STATE_STYLE.get(state, PENDING_STYLE)
        lines.append(f'  t{n} [label="{label}", fillcolor="{col.get(name, "#ffffff")}", '
                     f'{style}, tooltip="{_esc(d.get("params") or "")}"];')
    for a, b in g.edges():
        lines.append(f"  t{a} -> t{b};")
    lines.append("  subgraph cluster_legend { label=\"task names\"; fontsize=10;")
    for i, (name, c) in enumerate(col.items()):
        lines.append(f'    legend{i} [label="{_esc(name)}", fillcolor="{c}", style=filled];')
    lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _esc(s: Any) -> str:
    return str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def write_graph(run_dir: str, out_dir: str | None = None, svg: bool = True) -> dict[str, str]:
    """Write ``graph.dot`` (and ``graph.svg`` when graphviz is installed); return paths."""
    out_dir = out_dir or run_dir
    os.makedirs(out_dir, exist_ok=True)
    with Journal(run_dir) as j:
        g = build(j)
        title = j.run().get("run_id", "taskflow")
    paths = {"dot": os.path.join(out_dir, "graph.dot")}
    with open(paths["dot"], "w") as f:
        f.write(to_dot(g, title))
    if svg:
        dot = shutil.which("dot")
        if dot is None:
            paths["svg_error"] = "graphviz `dot` is not installed (apt-get install graphviz)"
        elif g.number_of_nodes() > SVG_MAX_TASKS:
            paths["svg_error"] = (f"{g.number_of_nodes()} tasks: too many to lay out; render "
                                  f"{paths['dot']} yourself (dot -Tsvg) if you must")
        else:
            svg_path = os.path.join(out_dir, "graph.svg")
            r = subprocess.run([dot, "-Tsvg", "-o", svg_path, paths["dot"]],
                               capture_output=True, text=True)
            if r.returncode == 0:
                paths["svg"] = svg_path
            else:
                paths["svg_error"] = r.stderr.strip() or f"dot exited with {r.returncode}"
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
