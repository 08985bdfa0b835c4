"""A layered layout for task graphs too wide for Graphviz ``dot``.

``dot`` ranks a fan-out of 200 calls into one row (an SVG 17,000 pt wide and
150 pt tall), and asked to wrap that row it spends minutes on the crossings
of the edges into the reduction. This layout is the simple half of a
Sugiyama layout, enough for the fan-outs and fan-ins task graphs are made of:

- layers by the longest path from a source (a task is one layer below the
  last of the tasks it reads);
- a layer wider than :data:`ROW_MAX` wraps into rows of about
  ``sqrt(k * ASPECT * ...)`` boxes, so k boxes make a block about
  :data:`ASPECT` times as wide as tall, not one row: 200 calls are 15 boxes
  by 14 rows, 1,000 are 33 by 31 (about 3,600 x 2,300 pt);
- within a layer, boxes in the order of the mean position of what they read
  (one sweep down), then by id.

The positions (points, y down) go to Graphviz ``neato -n2``, which draws the
boxes and straight edges where they are told: the SVG has the same structure
(``g.node``, ``g.edge``, ids) as ``dot``'s; or to :mod:`.svgdag`, which draws
them itself (the monitor, and everything where Graphviz is not installed).
:func:`fit` chooses the wrapping whose drawing has a panel's shape. It is
linear in the graph's size: 1,000 tasks are laid out and drawn in well under a
second.
"""
from __future__ import annotations

import math
from typing import Hashable, Iterable, Sequence

ROW_MAX = 24            # boxes in a layer before it wraps
WRAP_MIN = 6            # a layer of up to this many boxes never wraps (its arrows would cross
                        # the boxes of its own rows)
ASPECT = 1.6            # width / height of a wrapped block (a landscape page)
CHAR_W = 6.0            # points per label character at font size 10 (Helvetica, mean)
BOX_PAD = 16.0          # points around a label
BOX_H = 30.0            # a two-line box
GAP_X = 14.0            # between boxes in a row
GAP_Y = 22.0            # between rows of one layer
LAYER_GAP = 40.0        # between layers (room for the arrows)
BAND_GAP = 60.0         # between bands of layers set side by side (:func:`place`)
BAND_TOP = 24.0         # above the bands: room for the arrows from one band to the next
BANDS_WHEN = 2.0        # bands only for a drawing this many times too tall for its panel


def layers(nodes: Sequence[Hashable], edges: Iterable[tuple[Hashable, Hashable]]
           ) -> list[list[Hashable]]:
    """Nodes by layer: a node is one layer below its deepest predecessor.

    Nodes come in topological order when ``nodes`` is (task ids are); a cycle
    (never in a task graph) would put its nodes in layer 0 rather than loop.
    """
    preds: dict[Hashable, list[Hashable]] = {n: [] for n in nodes}
    for a, b in edges:
        if a in preds and b in preds and a != b:
            preds[b].append(a)
    depth: dict[Hashable, int] = {}
    for n in _topological(nodes, preds):
        depth[n] = 1 + max((depth[p] for p in preds[n] if p in depth), default=-1)
    out: list[list[Hashable]] = [[] for _ in range(max(depth.values(), default=-1) + 1)]
    for n in nodes:
        out[depth[n]].append(n)
    return out


def _topological(nodes: Sequence[Hashable], preds: dict[Hashable, list[Hashable]]
                 ) -> list[Hashable]:
    """Kahn's order; nodes left in a cycle follow in their given order."""
    succ: dict[Hashable, list[Hashable]] = {n: [] for n in nodes}
    missing = {n: 0 for n in nodes}
    for b, ps in preds.items():
        for a in ps:
            succ[a].append(b)
            missing[b] += 1
    ready = [n for n in nodes if missing[n] == 0]
    order: list[Hashable] = []
    while ready:
        n = ready.pop()
        order.append(n)
        for s in succ[n]:
            missing[s] -= 1
            if missing[s] == 0:
                ready.append(s)
    if len(order) < len(nodes):
        seen = set(order)
        order += [n for n in nodes if n not in seen]
    return order


def columns(k: int, cell_w: float) -> int:
    """Boxes per row for a layer of ``k``: one row up to :data:`ROW_MAX`, else a block
    about :data:`ASPECT` times as wide as it is tall."""
    if k <= ROW_MAX:
        return max(k, 1)
    row_h = BOX_H + GAP_Y
    return max(8, math.ceil(math.sqrt(k * ASPECT * row_h / cell_w)))


def label_width(label: str) -> float:
    """The width in points of a box whose label is ``label`` (its longest line)."""
    return max(len(line) for line in label.split("\n")) * CHAR_W + BOX_PAD


def place(nodes: Sequence[Hashable], edges: Sequence[tuple[Hashable, Hashable]],
          labels: dict[Hashable, str], groups: dict[Hashable, str] | None = None,
          cols_max: int | None = None, bands: int = 1, gutters: list[float] | None = None
          ) -> tuple[dict[Hashable, tuple[float, float]], float, float]:
    """Centre of every box in points (x right, y down), and the drawing's width and height.

    ``groups`` (a task's name) keeps the boxes of one group together within a layer.
    ``cols_max``: a layer wraps into rows of at most this many boxes, never fewer
    than :data:`WRAP_MIN` (by default :func:`columns` decides). ``bands``: the
    layers are set in that many columns side by side, read like a newspaper's
    (a deep graph in a wide panel); the x of the gutters between them is
    appended to ``gutters``.
    """
    groups = groups or {}
    preds: dict[Hashable, list[Hashable]] = {n: [] for n in nodes}
    for a, b in edges:
        if a in preds and b in preds:
            preds[b].append(a)
    blocks: list[tuple[float, list[list[Hashable]]]] = []   # per layer: cell width, its rows
    xs: dict[Hashable, float] = {}                       # a box's place in its layer, 0..1
    for layer in layers(nodes, edges):
        layer = sorted(layer, key=lambda n: (_barycentre(n, preds, xs), groups.get(n, ""),
                                             _key(n)))
        cell = max(label_width(labels.get(n, str(n))) for n in layer) + GAP_X
        cols = (columns(len(layer), cell) if cols_max is None
                else min(len(layer), max(cols_max, WRAP_MIN)))
        rows = [layer[r:r + cols] for r in range(0, len(layer), cols)]
        for r, part in enumerate(rows):
            for i, n in enumerate(part):      # its place in the layer's order (rows read
                xs[n] = (r * cols + i + 0.5) / len(layer)   # left to right, top to bottom)
        blocks.append((cell, rows))
    pos: dict[Hashable, tuple[float, float]] = {}
    top = BAND_TOP if bands > 1 else 0.0      # room above for the arrows between bands
    left = width = height = 0.0
    for band in _bands(blocks, bands):
        band_w = max((cell * len(part) for cell, rows in band for part in rows), default=0.0)
        if pos:
            if gutters is not None:
                gutters.append(left + BAND_GAP / 2)
            left += BAND_GAP
        y = top
        for k, (cell, rows) in enumerate(band):
            y += LAYER_GAP if k else 0.0
            for r, part in enumerate(rows):
                y += GAP_Y if r else 0.0
                x0 = left + (band_w - cell * len(part)) / 2
                for i, n in enumerate(part):
                    pos[n] = (x0 + cell * (i + 0.5), y + BOX_H / 2)
                y += BOX_H
        left += band_w
        width, height = left, max(height, y + top)      # as much room below as above
    return pos, width, height


def _block_h(rows: list[list[Hashable]]) -> float:
    return len(rows) * BOX_H + (len(rows) - 1) * GAP_Y


def _bands(blocks: list[tuple[float, list[list[Hashable]]]], bands: int
           ) -> list[list[tuple[float, list[list[Hashable]]]]]:
    """The layers' blocks cut into ``bands`` runs of about the same height."""
    if bands <= 1:
        return [blocks]
    total = sum(_block_h(rows) for _, rows in blocks) + LAYER_GAP * (len(blocks) - 1)
    target = total / bands
    out: list[list[tuple[float, list[list[Hashable]]]]] = [[]]
    h = 0.0
    for block in blocks:
        bh = _block_h(block[1])
        if out[-1] and h + LAYER_GAP + bh > target * 1.05 and len(out) < bands:
            out.append([])
            h = 0.0
        h += (LAYER_GAP if out[-1] else 0.0) + bh
        out[-1].append(block)
    return out


def fit(nodes: Sequence[Hashable], edges: Sequence[tuple[Hashable, Hashable]],
        labels: dict[Hashable, str], groups: dict[Hashable, str] | None = None,
        aspect: float = ASPECT, gutters: list[float] | None = None
        ) -> tuple[dict[Hashable, tuple[float, float]], float, float]:
    """:func:`place` with the wrapping whose drawing is closest to ``aspect`` (width / height).

    The monitor asks for its panel's shape, so the graph fills the panel at "fit"
    instead of a thin row or column in the middle of it: wide layers wrap into
    rows, from the widest layer down to :data:`WRAP_MIN` boxes a row, each 1.3
    times narrower; a graph still :data:`BANDS_WHEN` times too tall (a long chain)
    is set in bands side by side, more while that helps. Each placement is linear
    in the graph's size.
    """
    per_layer = layers(nodes, edges)
    widest = max((len(x) for x in per_layer), default=1)
    aspect = min(max(aspect, 0.1), 10.0)

    def ratio(k: int, b: int) -> float:
        _, w, h = place(nodes, edges, labels, groups, cols_max=k, bands=b)
        return max(w, 1.0) / max(h, 1.0)

    def miss(r: float) -> float:
        return abs(math.log(r / aspect))

    cands: list[int] = []
    c = float(widest)
    while True:
        k = max(1, round(c))
        if k not in cands:
            cands.append(k)
        if k <= WRAP_MIN:
            break
        c /= 1.3
    ratios = {k: ratio(k, 1) for k in cands}
    cols = min(cands, key=lambda k: (miss(ratios[k]), -k))
    bands = 1
    if ratios[cols] < aspect / BANDS_WHEN:     # far too tall: bands, more while that helps
        best = (miss(ratios[cols]), cols, 1)
        for k in cands:
            b, m = 1, miss(ratios[k])
            while b < len(per_layer):
                m2 = miss(ratio(k, b + 1))
                if m2 >= m - 1e-9:
                    break
                b, m = b + 1, m2
            best = min(best, (m, k, b))
        _, cols, bands = best
    return place(nodes, edges, labels, groups, cols_max=cols, bands=bands, gutters=gutters)


def _barycentre(n: Hashable, preds: dict[Hashable, list[Hashable]],
                xs: dict[Hashable, float]) -> float:
    ps = [xs[p] for p in preds.get(n, ()) if p in xs]
    return sum(ps) / len(ps) if ps else 0.5


def _key(n: Hashable) -> tuple[int, str]:
    """Ids in number order (task ids are ints), anything else by its text."""
    return (n, "") if isinstance(n, int) else (-1, str(n))
