"""The monitor's DAG picture: laid out by Graphviz ``dot`` on the server, as SVG.

Up to :data:`TASK_GRAPH_MAX` tasks the picture is the task graph: one box
per task (``id="task-<id>"``), layered top to bottom with arrows from
producer to consumer (an arrow another path implies is left out). Above
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

import shutil
import subprocess
import threading
from collections import OrderedDict
from typing import Any

from ..journal.reader import Journal

TASK_GRAPH_MAX = 300       # tasks drawn one by one; above, the graph of names
DOT_TIMEOUT = 30.0         # s
_CACHE_SIZE = 8


class NoGraphviz(RuntimeError):
    """``dot`` is not installed."""


def _esc(s: Any) -> str:
    return str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def task_graph_dot(tasks: list[dict[str, Any]], edges: list[tuple[int, int]],
                   colours: dict[str, str]) -> str:
    """DOT of the tasks: the name on the first line, ``#id`` on the second."""
    lines = ["digraph run {", "  rankdir=TB; nodesep=0.25; ranksep=0.45;",
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, '
             'fillcolor="#eeeeee", color="#555555", height=0.3, margin="0.08,0.03"];',
             '  edge [color="#777777", arrowsize=0.6];']
    for t in tasks:
        name = t.get("name") or "?"
        lines.append(f'  t{t["id"]} [id="task-{t["id"]}", class="task", '
                     f'label="{_esc(name)}\\n#{t["id"]}", color="{colours.get(name, "#555555")}", '
                     f'penwidth=2.5, tooltip="#{t["id"]} {_esc(name)}({_esc(t.get("params") or "")})"];')
    for a, b in edges:
        lines.append(f"  t{a} -> t{b};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def name_graph_dot(names: list[str], name_edges: list[tuple[str, str]],
                   colours: dict[str, str]) -> str:
    """DOT of the task names (counts are written in by the page)."""
    index = {n: i for i, n in enumerate(names)}
    lines = ["digraph names {", "  rankdir=TB; nodesep=0.3; ranksep=0.5;",
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11, '
             'fillcolor="#eeeeee", color="#555555", penwidth=2.5];',
             '  edge [color="#777777", arrowsize=0.7];']
    for n, i in index.items():
        # the second line is a placeholder the page replaces with the counts
        lines.append(f'  n{i} [id="name-{i}", class="name", label="{_esc(n)}\\n'
                     f'{"." * 28}", color="{colours.get(n, "#555555")}", tooltip="{_esc(n)}"];')
    for a, b in name_edges:
        if a in index and b in index:
            lines.append(f"  n{index[a]} -> n{index[b]};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def reduce_edges(edges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The edges no other path implies (transitive reduction).

    A file every task reads (the NMMB namelist) links its producer to every
    task: drawn, those arrows hide the graph's shape. Ordering is unchanged.
    """
    import networkx as nx
    g = nx.DiGraph(edges)
    if not nx.is_directed_acyclic_graph(g):
        return sorted(set(edges))
    return sorted(nx.transitive_reduction(g).edges())


def render(dot_text: str) -> str:
    """SVG of ``dot_text`` (raises :class:`NoGraphviz`, or RuntimeError on dot's error)."""
    exe = shutil.which("dot")
    if exe is None:
        raise NoGraphviz("Graphviz `dot` is not installed on the monitor's machine "
                         "(apt-get install graphviz); the DAG view needs it")
    r = subprocess.run([exe, "-Tsvg"], input=dot_text, capture_output=True, text=True,
                       timeout=DOT_TIMEOUT)
    if r.returncode != 0:
        raise RuntimeError(f"dot failed: {r.stderr.strip()[:500]}")
    svg = r.stdout
    return svg[svg.index("<svg"):] if "<svg" in svg else svg


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
            svg = render(task_graph_dot(tasks, drawn, colours))
            out = {"kind": kind, "svg": svg, "tasks": len(tasks), "names": [],
                   "hidden_edges": len(set(edges)) - len(drawn)}
        else:
            svg = render(name_graph_dot(names, name_edges, colours))
            out = {"kind": kind, "svg": svg, "tasks": total, "names": names}
        with self._lock:
            self._cache[key] = out
            while len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return out
