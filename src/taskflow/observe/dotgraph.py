"""The task graph and the graph of task names as Graphviz DOT, and their SVG.

One builder for ``taskflow graph``, the report and the monitor, so a task
looks the same in all three: its box is filled with its state's colour
(:data:`.palette.STATE_COLOURS`, as in the terminal), outlined in its task
name's colour, labelled with the name and ``#id state``; it carries
``id="task-<id>"`` for the monitor's page. The graph of names (Snakemake's
rule graph, Nextflow's process DAG) has one box per name with its counts by
state and one arrow per pair of names with the number of dependencies it
stands for.

Sizes stay bounded: a graph ``dot`` would draw as one endless row (a layer
wider than :data:`.layout.ROW_MAX`) is laid out by :mod:`.layout` and drawn
by ``neato -n2``; and every drawing is scaled down to fit
:data:`MAX_INCHES` square (Graphviz's ``size``), so no picture is more than
about 4,000 x 4,000 pt, whatever the run. The SVG stays sharp when zoomed.
"""
from __future__ import annotations

import html
import math
import shutil
import subprocess
from typing import Any, Iterable, Sequence

from . import layout
from .palette import STATE_COLOURS

TASK_GRAPH_MAX = 300      # `taskflow graph` and the monitor draw each task up to this many
MAX_INCHES = 55.5         # 3,996 pt: the largest side of any drawing
DOT_TIMEOUT = 60.0        # s
PENDING = "#ffffff"
TIP_MAX = 300             # characters of a box's hover text (a task's parameters)
NAME_LEGEND_MAX = 30      # names listed in a picture's legend; the rest are counted
ORDER = ("DONE", "RUNNING", "DISPATCHED", "READY", "SUBMITTED", "FAILED", "CANCELLED",
         "INTERRUPTED")


class NoGraphviz(RuntimeError):
    """Graphviz is not installed."""


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n - 3] + "..."


def esc(s: Any) -> str:
    """A string for a double-quoted DOT attribute."""
    return str(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ")


def reduce_edges(edges: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """The edges no other path implies (the transitive reduction).

    A file every task reads (the NMMB namelist) links its producer to every
    task: drawn, those arrows hide the graph's shape. The order is unchanged.
    """
    import networkx as nx
    g = nx.DiGraph(list(edges))
    if not nx.is_directed_acyclic_graph(g):
        return sorted(g.edges())
    return sorted(nx.transitive_reduction(g).edges())


def task_dot(tasks: Sequence[dict[str, Any]], edges: Sequence[tuple[int, int]],
             colours: dict[str, str], title: str = "taskflow",
             legend: bool = True, calls: Sequence[tuple[int, int]] = ()) -> tuple[str, str]:
    """(DOT, engine) of one box per task: ``dot`` unless a layer is too wide for it.

    ``calls`` are (parent, child) pairs of tasks a running task called: dashed
    edges, and the children are laid out under their parent."""
    if calls:
        edges = [*edges, *calls]
    labels = {t["id"]: f"{t.get('name') or '?'}\n#{t['id']} {(t.get('state') or '').lower()}"
              for t in tasks}
    ids = [t["id"] for t in tasks]
    wide = len(tasks) > 1 and max(len(x) for x in layout.layers(ids, edges)) > layout.ROW_MAX
    lines = [f'digraph "{esc(title)}" {{',
             f'  size="{MAX_INCHES},{MAX_INCHES}"; outputorder=edgesfirst; '
             'nodesep=0.2; ranksep=0.45;',
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=10, '
             'height=0.3, margin="0.08,0.03", penwidth=2.5];',
             '  edge [color="#777777", arrowsize=0.6];']
    pos: dict[Any, tuple[float, float]] = {}
    if wide:
        pos, _, height = layout.place(ids, edges, labels,
                                      {t["id"]: t.get("name") or "" for t in tasks})
        lines.append('  splines=false; edge [color="#77777766"];')
    for t in tasks:
        name, state = t.get("name") or "?", t.get("state") or ""
        name_l, rest = labels[t["id"]].split("\n", 1)
        extra = ""
        if t["id"] in pos:
            x, y = pos[t["id"]]
            extra = f', pos="{x:.1f},{height - y:.1f}!"'
        tip = _short(f"#{t['id']} {name}({t.get('params') or ''})", TIP_MAX)
        lines.append(f'  t{t["id"]} [id="task-{t["id"]}", class="task", '
                     f'label="{esc(name_l)}\\n{esc(rest)}", '
                     f'fillcolor="{STATE_COLOURS.get(state, PENDING)}", '
                     f'color="{colours.get(name, "#555555")}", tooltip="{esc(tip)}"{extra}];')
    called = set(calls)
    for a, b in edges:
        lines.append(f'  t{a} -> t{b} [style=dashed, tooltip="called by #{a}"];'
                     if (a, b) in called else f"  t{a} -> t{b};")
    if legend:
        lines.append(_legend(sorted({t.get("state") or "" for t in tasks}),
                             [n for n in colours if any(t.get("name") == n for t in tasks)],
                             colours))
    lines.append("}")
    return "\n".join(lines) + "\n", "neato" if wide else "dot"


def name_dot(names: Sequence[str], counts: dict[str, dict[str, int]],
             edge_counts: dict[tuple[str, str], int], colours: dict[str, str],
             live: bool = False) -> str:
    """DOT of one box per task name with its counts by state, arrows with their counts.

    ``live``: the monitor's form: the box's second line is a placeholder the
    page fills with the counts as the run goes on (``id="name-<i>"``).
    """
    index = {n: i for i, n in enumerate(names)}
    lines = ["digraph names {",
             f'  size="{MAX_INCHES},{MAX_INCHES}"; rankdir=TB; nodesep=0.3; ranksep=0.5;',
             '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11, '
             'fillcolor="#f4f4f4", penwidth=2.5];',
             '  edge [color="#777777", arrowsize=0.7, fontname="Helvetica", fontsize=9, '
             'fontcolor="#555555"];']
    for n, i in index.items():
        c = counts.get(n, {})
        col = colours.get(n, "#555555")
        if live:
            label = f'"{esc(n)}\\n{"." * 28}"'
        else:
            label = "<" + _count_table(n, c) + ">"
        lines.append(f'  n{i} [id="name-{i}", class="name", label={label}, color="{col}", '
                     f'tooltip="{esc(n)}: {sum(c.values())} tasks"];')
    most = max(edge_counts.values(), default=1)
    for (a, b), k in sorted(edge_counts.items()):
        if a in index and b in index:
            width = 1 + 2 * math.log10(k) / max(math.log10(most), 1)
            lab = "" if live else f', label=" {k}"'
            lines.append(f"  n{index[a]} -> n{index[b]} [penwidth={width:.2f}{lab}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _count_table(name: str, c: dict[str, int]) -> str:
    """An HTML-like label: the name, then one coloured cell per state with its count."""
    cells = "".join(f'<TD BGCOLOR="{STATE_COLOURS.get(s, PENDING)}">{c[s]} {s.lower()}</TD>'
                    for s in ORDER if c.get(s))
    span = max(1, sum(1 for s in ORDER if c.get(s)))
    return (f'<TABLE BORDER="0" CELLBORDER="0" CELLSPACING="2" CELLPADDING="3">'
            f'<TR><TD COLSPAN="{span}"><B>{html.escape(name)}</B></TD></TR>'
            f'<TR>{cells or "<TD>no tasks</TD>"}</TR></TABLE>')


def _legend(states: list[str], names: list[str], colours: dict[str, str]) -> str:
    """The graph's label: the states' fills and the names' outlines, as a table."""
    cells = [f'<TD BGCOLOR="{STATE_COLOURS[s]}">{s.lower()}</TD>' for s in ORDER if s in states]
    shown = names[:NAME_LEGEND_MAX]
    cells += [f'<TD BORDER="2" COLOR="{colours[n]}">{html.escape(n)}</TD>' for n in shown]
    if len(names) > len(shown):
        cells.append(f"<TD>... {len(names) - len(shown)} more names</TD>")
    return ('  label=<<TABLE BORDER="0" CELLSPACING="3" CELLPADDING="2"><TR><TD>fill: state, '
            'outline: task name</TD>' + "".join(cells) + "</TR></TABLE>>; fontname=\"Helvetica\"; "
            "fontsize=10; labelloc=b;")


def name_edge_counts(tasks: Iterable[dict[str, Any]], edges: Iterable[tuple[int, int]]
                     ) -> dict[tuple[str, str], int]:
    """(producer name, consumer name) -> how many task dependencies go that way."""
    name = {t["id"]: t.get("name") or "?" for t in tasks}
    out: dict[tuple[str, str], int] = {}
    for a, b in edges:
        if a in name and b in name:
            key = (name[a], name[b])
            out[key] = out.get(key, 0) + 1
    return out


def render(dot_text: str, engine: str = "dot", fmt: str = "svg",
           timeout: float = DOT_TIMEOUT) -> str:
    """The drawing of ``dot_text`` (SVG text from ``<svg`` on; raises :class:`NoGraphviz`,
    or RuntimeError with Graphviz's message or on its time-out)."""
    exe = shutil.which(engine)
    if exe is None:
        raise NoGraphviz(f"Graphviz `{engine}` is not installed (apt-get install graphviz)")
    argv = [exe, f"-T{fmt}"] + (["-n2"] if engine == "neato" else [])
    try:
        r = subprocess.run(argv, input=dot_text, capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"Graphviz `{engine}` took more than {timeout:g} s") from None
    if r.returncode != 0:
        raise RuntimeError(f"Graphviz `{engine}` failed: {r.stderr.strip()[:500]}")
    out = r.stdout
    return out[out.index("<svg"):] if fmt == "svg" and "<svg" in out else out
