"""The task graph and the graph of task names drawn as SVG in Python: no Graphviz needed.

The monitor draws every graph this way, and the report does when Graphviz is
not installed, so no run's picture depends on a system package. Positions
come from :mod:`.layout` (layers by longest path, wide layers wrapped, and
with ``aspect`` the wrapping that best fills a panel of that shape); edges are
straight arrows from a box's bottom to the next one's top.

The SVG has the structure the monitor's page and the tests read, as
Graphviz's does: a box is ``<g id="task-<id>" class="node task">`` (or
``id="name-<i>" class="node name"``) holding a ``<title>`` (its hover text),
a ``<path>`` (the box: fill the state's colour, outline the task name's) and
two ``<text>`` lines; an arrow is ``<g class="edge">`` with a ``<title>``
(``t1->t2``, ``n0->n2``), a ``<path>`` and a ``<polygon>`` head.
"""
from __future__ import annotations

import math
from html import escape
from typing import Any, Hashable, Sequence

from . import layout
from .palette import STATE_COLOURS

FONT = 10.0               # points: the size :mod:`.layout` measures labels at
MARGIN = 8.0              # points around the drawing
MAX_SIDE = 3996.0         # points: the largest side of a drawing (as .dotgraph.MAX_INCHES)
PENDING = "#ffffff"
TIP_MAX = 300             # characters of a box's hover text
LIVE_COUNTS = "." * 28    # the room a live name box keeps for the counts the page writes
ORDER = ("DONE", "RUNNING", "DISPATCHED", "READY", "SUBMITTED", "FAILED", "CANCELLED",
         "INTERRUPTED")


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n - 3] + "..."


def _box(x: float, y: float, w: float, h: float, r: float = 5.0) -> str:
    """A rounded rectangle centred on (x, y), as path data."""
    x0, y0, x1, y1 = x - w / 2, y - h / 2, x + w / 2, y + h / 2
    return (f"M{x0 + r:.1f},{y0:.1f}H{x1 - r:.1f}Q{x1:.1f},{y0:.1f} {x1:.1f},{y0 + r:.1f}"
            f"V{y1 - r:.1f}Q{x1:.1f},{y1:.1f} {x1 - r:.1f},{y1:.1f}H{x0 + r:.1f}"
            f"Q{x0:.1f},{y1:.1f} {x0:.1f},{y1 - r:.1f}V{y0 + r:.1f}"
            f"Q{x0:.1f},{y0:.1f} {x0 + r:.1f},{y0:.1f}Z")


def _arrow(a: tuple[float, float], b: tuple[float, float], title: str, width: float = 1.0,
           label: str = "", gutters: Sequence[float] = (), call: bool = False) -> str:
    """An edge from the bottom of box ``a`` to the top of box ``b`` (centres), with a head.

    To a box in a band further right (``gutters`` between them): down into the
    gap below ``a``, along it to the gutter left of ``b``'s band, along the gutter
    to the gap above ``b``, and along that gap to above ``b``: never across a box.
    """
    half = layout.BOX_H / 2
    x0, y0 = a[0], a[1] + half
    x1, y1 = b[0], b[1] - half
    start, via = f"M{x0:.1f},{y0:.1f}", ""
    left = [g for g in gutters if a[0] < g < b[0]]
    if left:
        gx, low, high = max(left), y0 + 8, y1 - layout.BAND_TOP / 2
        via = f"L{x0:.1f},{low:.1f}L{gx:.1f},{low:.1f}L{gx:.1f},{high:.1f}L{x1:.1f},{high:.1f}"
        x0, y0 = x1, high                # the head points down into b
    elif y1 <= y0:                       # same row (never in a layered graph): side to side
        y0, y1 = a[1], b[1]
        x0 += math.copysign(half, x1 - x0)
        start = f"M{x0:.1f},{y0:.1f}"
    dx, dy = x1 - x0, y1 - y0
    d = math.hypot(dx, dy) or 1.0
    ux, uy = dx / d, dy / d
    size = 6.0 + width
    bx, by = x1 - ux * size, y1 - uy * size          # the head's base
    px, py = -uy * size * 0.45, ux * size * 0.45
    head = f"{x1:.1f},{y1:.1f} {bx + px:.1f},{by + py:.1f} {bx - px:.1f},{by - py:.1f}"
    text = (f'<text x="{(x0 + x1) / 2 + 4:.1f}" y="{(y0 + y1) / 2:.1f}" font-size="9" '
            f'fill="#555555">{escape(label)}</text>' if label else "")
    dash = ' stroke-dasharray="4 3"' if call else ""    # a nested call: dashed
    return (f'<g class="edge{" call" if call else ""}"><title>{escape(title)}</title>'
            f'<path d="{start}{via}L{bx:.1f},{by:.1f}" fill="none" '
            f'stroke="#777777"{dash} '
            f'stroke-width="{width:.2f}"/><polygon points="{head}" fill="#777777" '
            f'stroke="none"/>{text}</g>')


def _node(ident: str, cls: str, pos: tuple[float, float], label: str, tip: str, fill: str,
          outline: str, font: float) -> str:
    first, second = (label.split("\n", 1) + [""])[:2]
    w = layout.label_width(label)
    x, y = pos
    return (f'<g id="{ident}" class="node {cls}"><title>{escape(_short(tip, TIP_MAX))}</title>'
            f'<path d="{_box(x, y, w, layout.BOX_H)}" fill="{fill}" stroke="{outline}" '
            f'stroke-width="2.5"/>'
            f'<text x="{x:.1f}" y="{y - 2:.1f}" text-anchor="middle" font-size="{font:g}">'
            f'{escape(first)}</text>'
            f'<text x="{x:.1f}" y="{y + font:.1f}" text-anchor="middle" font-size="{font:g}">'
            f'{escape(second)}</text></g>')


def _svg(body: list[str], width: float, height: float, kind: str) -> str:
    """The drawing, its size at most :data:`MAX_SIDE` a side (scaled down, as Graphviz's
    ``size``: the viewBox keeps every point, so it stays sharp when zoomed)."""
    w, h = width + 2 * MARGIN, height + 2 * MARGIN
    k = min(1.0, MAX_SIDE / max(w, h, 1.0))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="tfgraph" data-kind="{kind}" '
            f'width="{w * k:.0f}pt" height="{h * k:.0f}pt" viewBox="0 0 {w:.1f} {h:.1f}" '
            f'font-family="Helvetica,Arial,sans-serif">'
            f'<g class="graph" transform="translate({MARGIN:g},{MARGIN:g})">'
            + "".join(body) + "</g></svg>\n")


def _place(nodes: Sequence[Hashable], edges: Sequence[tuple[Hashable, Hashable]],
           labels: dict[Hashable, str], groups: dict[Hashable, str] | None,
           aspect: float | None, gutters: list[float]
           ) -> tuple[dict[Hashable, tuple[float, float]], float, float]:
    if aspect is None:
        return layout.place(nodes, edges, labels, groups)
    return layout.fit(nodes, edges, labels, groups, aspect, gutters)


def task_svg(tasks: Sequence[dict[str, Any]], edges: Sequence[tuple[int, int]],
             colours: dict[str, str], aspect: float | None = None,
             calls: Sequence[tuple[int, int]] = ()) -> str:
    """One box per task (``edges`` as given: reduce them first), laid out to ``aspect``;
    ``calls``: (parent, child) of nested calls, drawn dashed (laid out as edges too)."""
    labels: dict[Hashable, str] = {
        t["id"]: f"{t.get('name') or '?'}\n#{t['id']} {(t.get('state') or '').lower()}"
        for t in tasks}
    ids = [t["id"] for t in tasks]
    gutters: list[float] = []
    pos, width, height = _place(ids, [*edges, *calls], labels,
                                {t["id"]: t.get("name") or "" for t in tasks}, aspect, gutters)
    body = [_arrow(pos[a], pos[b], f"t{a}->t{b}", gutters=gutters)
            for a, b in edges if a in pos and b in pos]
    body += [_arrow(pos[a], pos[b], f"t{a} calls t{b}", gutters=gutters, call=True)
             for a, b in calls if a in pos and b in pos]
    for t in tasks:
        name = t.get("name") or "?"
        body.append(_node(f"task-{t['id']}", "task", pos[t["id"]], labels[t["id"]],
                          f"#{t['id']} {name}({t.get('params') or ''})",
                          STATE_COLOURS.get(t.get("state") or "", PENDING),
                          colours.get(name, "#555555"), FONT))
    return _svg(body, width, height, "tasks")


def counts_text(c: dict[str, int]) -> str:
    """``3 done · 1 failed``: a name's counts by state, in the order a reader wants them."""
    parts = [f"{c[s]} {s.lower()}" for s in ORDER if c.get(s)]
    return " · ".join(parts) or "no tasks"


def name_svg(names: Sequence[str], counts: dict[str, dict[str, int]],
             edge_counts: dict[tuple[str, str], int], colours: dict[str, str],
             live: bool = False, aspect: float | None = None) -> str:
    """One box per task name with its counts (``live``: a placeholder the page fills),
    one arrow per pair of names, as thick as the log of the dependencies it stands for."""
    index = {n: i for i, n in enumerate(names)}
    labels: dict[Hashable, str] = {
        n: f"{n}\n{LIVE_COUNTS if live else counts_text(counts.get(n, {}))}" for n in names}
    drawn = [(a, b) for a, b in sorted(edge_counts) if a in index and b in index]
    gutters: list[float] = []
    pos, width, height = _place(list(names), [(a, b) for a, b in drawn if a != b], labels,
                                None, aspect, gutters)
    most = max(edge_counts.values(), default=1)
    body = []
    for a, b in drawn:
        k = edge_counts[(a, b)]
        w = 1 + 2 * math.log10(max(k, 1)) / max(math.log10(most), 1)
        title = f"n{index[a]}->n{index[b]}"
        if a == b:                     # a name that feeds itself: a loop on the box's side
            x, y = pos[a]
            r = layout.label_width(labels[a]) / 2
            body.append(f'<g class="edge"><title>{title}</title><path d="M{x + r:.1f},'
                        f'{y - 6:.1f}c14,-4 14,16 0,12" fill="none" stroke="#777777" '
                        f'stroke-width="{w:.2f}"/><polygon points="{x + r:.1f},{y + 6:.1f} '
                        f'{x + r + 6:.1f},{y + 3:.1f} {x + r + 6:.1f},{y + 10:.1f}" '
                        f'fill="#777777"/></g>')
            continue
        body.append(_arrow(pos[a], pos[b], title, w, "" if live else str(k), gutters))
    for n, i in index.items():
        c = counts.get(n, {})
        state = ("FAILED" if c.get("FAILED") else "RUNNING" if c.get("RUNNING") else
                 "DONE" if c and all(s == "DONE" for s in c if c[s]) else "")
        body.append(_node(f"name-{i}", "name", pos[n], labels[n],
                          f"{n}: {sum(c.values())} tasks", STATE_COLOURS.get(state, "#f4f4f4"),
                          colours.get(n, "#555555"), FONT))
    return _svg(body, width, height, "names")
