"""The graph drawn in Python (no Graphviz): its layout fits a panel's shape, its SVG the page's."""
from __future__ import annotations

import xml.etree.ElementTree as ET

from taskflow.observe import layout, svgdag

SVG = "{http://www.w3.org/2000/svg}"


def _fan(n: int) -> tuple[list[dict], list[tuple[int, int]]]:
    """A root, a fan of n, a last task reading them all."""
    tasks = [{"id": 1, "name": "root", "state": "DONE"}]
    tasks += [{"id": i, "name": "work", "state": "RUNNING"} for i in range(2, n + 2)]
    tasks += [{"id": n + 2, "name": "last", "state": None}]
    edges = [(1, i) for i in range(2, n + 2)] + [(i, n + 2) for i in range(2, n + 2)]
    return tasks, edges


def _labels(tasks: list[dict]) -> dict:
    return {t["id"]: f"{t['name']}\n#{t['id']} done" for t in tasks}


def test_fit_wraps_the_layers_to_the_panels_shape():
    tasks, edges = _fan(40)
    ids = [t["id"] for t in tasks]
    for aspect in (0.7, 1.5, 3.0):
        _, w, h = layout.fit(ids, edges, _labels(tasks), None, aspect)
        assert aspect / 1.6 < w / h < aspect * 1.6, (aspect, w, h)
    tasks, edges = _fan(20)
    ids = [t["id"] for t in tasks]
    _, w, h = layout.place(ids, edges, _labels(tasks))       # unfitted: one long row of 20
    assert w / h > 6
    _, w, h = layout.fit(ids, edges, _labels(tasks), None, 1.5)
    assert w / h < 3


def test_fit_never_wraps_a_small_layer():
    """A diamond of four stays a diamond: a wrapped layer of two would hide an arrow."""
    nodes = ["a", "b", "c", "d"]
    edges = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d")]
    pos, _, _ = layout.fit(nodes, edges, {n: n for n in nodes}, None, 0.2)
    assert pos["b"][1] == pos["c"][1] and pos["b"][0] != pos["c"][0]


def test_task_svg_has_the_structure_the_page_reads():
    tasks, edges = _fan(3)
    root = ET.fromstring(svgdag.task_svg(tasks, edges, {"work": "#123456"}, aspect=1.5))
    boxes = {g.get("id"): g for g in root.iter(SVG + "g") if "task" in (g.get("class") or "")}
    assert set(boxes) == {"task-1", "task-2", "task-3", "task-4", "task-5"}
    texts = [t.text for t in boxes["task-2"].iter(SVG + "text")]
    assert texts == ["work", "#2 running"]
    assert boxes["task-2"].find(SVG + "path").get("stroke") == "#123456"
    assert boxes["task-2"].find(SVG + "title").text == "#2 work()"
    arrows = [g for g in root.iter(SVG + "g") if g.get("class") == "edge"]
    assert len(arrows) == 6 and all(g.find(SVG + "polygon") is not None for g in arrows)
    assert {g.find(SVG + "title").text for g in arrows} >= {"t1->t2", "t4->t5"}


def test_name_svg_counts_and_weighs_the_arrows():
    root = ET.fromstring(svgdag.name_svg(
        ["a", "b"], {"a": {"DONE": 3}, "b": {"DONE": 1, "FAILED": 2}},
        {("a", "b"): 1000, ("b", "b"): 1}, {}))
    boxes = {g.get("id"): [t.text for t in g.iter(SVG + "text")]
             for g in root.iter(SVG + "g") if "name" in (g.get("class") or "")}
    assert boxes == {"name-0": ["a", "3 done"], "name-1": ["b", "1 done · 2 failed"]}
    arrows = {g.find(SVG + "title").text: g for g in root.iter(SVG + "g")
              if g.get("class") == "edge"}
    assert set(arrows) == {"n0->n1", "n1->n1"}
    assert float(arrows["n0->n1"].find(SVG + "path").get("stroke-width")) == 3.0
    assert [t.text for t in arrows["n0->n1"].iter(SVG + "text")] == ["1000"]


def test_a_deep_graph_is_set_in_bands_its_arrows_in_the_gutters():
    """A chain of 45 in a landscape panel: columns of layers side by side, not a thin column
    of specks; the arrow from one band to the next runs in the gutter between them."""
    tasks = [{"id": i, "name": "step", "state": "DONE"} for i in range(1, 46)]
    edges = [(i, i + 1) for i in range(1, 45)]
    gutters: list[float] = []
    pos, w, h = layout.fit([t["id"] for t in tasks], edges, _labels(tasks), None, 1.4, gutters)
    assert 1.4 / 1.6 < w / h < 1.4 * 1.6 and len(gutters) >= 3
    assert pos[2][1] > pos[1][1]                        # a band reads top to bottom
    root = ET.fromstring(svgdag.task_svg(tasks, edges, {}, aspect=1.4))
    crossing = [g for g in root.iter(SVG + "g") if g.get("class") == "edge"
                and pos[int(g.find(SVG + "title").text.split("->t")[1])][0]
                > pos[int(g.find(SVG + "title").text[1:].split("->")[0])][0] + 1]
    assert len(crossing) == len(gutters)                # one arrow per band boundary
    for g in crossing:                                  # routed: down, across, up, across
        assert g.find(SVG + "path").get("d").count("L") == 5
