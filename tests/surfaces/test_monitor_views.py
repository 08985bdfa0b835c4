"""What a person sees in the monitor and the report's graph, measured in headless Chromium.

A 45-task run at "fit": every label drawn at 9 px or more and the graph filling its
panel; a 2,000-task run: the graph of names, no label under 9 px, no box drawn as a
speck with text; a finished run opened later: its node charts over its own span; the
logs pane before a click; the report's graph drawn when Graphviz is not installed.
Screenshots go to test-artifacts/ (1,400 px wide).
"""
from __future__ import annotations

import os
import shutil
import xml.etree.ElementTree as ET

import pytest

import taskflow
from taskflow.journal import Journal
from taskflow.monitor import Monitor
from taskflow.observe import dotgraph

from support import browser
from support import observe_tasks as ot

# every label of the graph drawn (not display:none): its size in px on the screen
LABELS = """() => [...document.querySelectorAll('#dag g.node text')]
  .filter((t) => getComputedStyle(t).display !== 'none' && t.textContent.trim())
  .map((t) => parseFloat(t.getAttribute('font-size')) * t.getScreenCTM().a)"""

# the union of the boxes on the screen over the panel: [width share, height share]
FILL = """() => { const p = document.getElementById('dag-wrap').getBoundingClientRect();
  let x0 = 1e9, y0 = 1e9, x1 = -1e9, y1 = -1e9;
  for (const g of document.querySelectorAll('#dag g.node')) { const b = g.getBoundingClientRect();
    x0 = Math.min(x0, b.left); y0 = Math.min(y0, b.top); x1 = Math.max(x1, b.right);
    y1 = Math.max(y1, b.bottom); }
  return [(x1 - x0) / p.width, (y1 - y0) / p.height]; }"""


def _run(tmp, build) -> tuple[str, str]:
    """Run ``build()`` to the end in ``tmp``; (runs directory, run id)."""
    old = os.getcwd()
    os.chdir(tmp)
    try:
        with taskflow.Runtime(workers=2, run_dir=str(tmp / "runs"), echo_logs=False) as rt:
            build()
    finally:
        os.chdir(old)
    return str(tmp / "runs"), rt.run_id


def _forty_five() -> None:
    """A root, a fan of 22, one task after each: 45 tasks (two rows of 22 boxes, Graphviz
    draws labels of about 5 px in the panel)."""
    root = ot.noop(0)
    taskflow.wait_on([ot.nap(0, ot.add(root, i)) for i in range(22)])


def _two_thousand() -> None:
    """A root, two fans of 999 under two task names, a last one: 2,000 no-op tasks."""
    root = ot.noop(0)
    adds = [ot.add(root, i) for i in range(999)]
    naps = [ot.nap(0, root) for _ in range(999)]
    taskflow.wait_on([ot.chatty(adds[0])] + naps)         # chatty(0) prints nothing


@pytest.fixture(scope="module")
def forty_five(tmp_path_factory):
    runs, run_id = _run(tmp_path_factory.mktemp("m45"), _forty_five)
    mon = Monitor(runs, run_id).start()
    yield runs, run_id, mon
    mon.stop()


def test_45_tasks_at_fit_have_legible_labels_and_fill_the_panel(forty_five):
    runs, run_id, mon = forty_five
    with browser.page(1400, 1000) as pg:
        pg.goto(mon.url)
        pg.wait_for_function("document.querySelectorAll('#dag g.task[data-state=\"DONE\"]')"
                             ".length == 45")
        pg.wait_for_selector("#dag-wrap[data-lod]")
        sizes = pg.evaluate(LABELS)
        assert len(sizes) == 90                      # every box's two lines are drawn ...
        assert min(sizes) >= 9.0, sizes              # ... at 9 px or more
        assert pg.get_attribute("#dag-wrap", "data-lod") == "labels"
        wide, tall = pg.evaluate(FILL)
        assert max(wide, tall) >= 0.85 and wide * tall >= 0.45, (wide, tall)
        pg.screenshot(path=browser.artifact("monitor-45.png"))
        # zoomed out past 9 px the boxes become cells; hovering one names it
        for _ in range(4):
            pg.click("#dag-out")
        assert pg.get_attribute("#dag-wrap", "data-lod") == "cells"
        assert pg.evaluate(LABELS) == []
        box = pg.query_selector("#task-1").bounding_box()
        pg.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        assert pg.is_visible("#dag-tip") and "#1" in pg.inner_text("#dag-tip")
        pg.click("#dag-fit")
        assert pg.get_attribute("#dag-wrap", "data-lod") == "labels"
        assert pg.errors == []


def test_a_finished_run_opened_later_charts_its_own_span(forty_five):
    runs, run_id, mon = forty_five
    with Journal(os.path.join(runs, run_id)) as j:
        run = j.run()
    # (a run shorter than 0.1 s is charted over 0.1 s: charts.js, a readable axis)
    span = max(run["t_end"] - run["t_start"], 0.1)
    with browser.page(1400, 1000) as pg:
        pg.goto(mon.url)
        pg.wait_for_selector("#nodes svg.load")
        # the logs pane says what it will show before a click, and is not a black box
        hint = pg.inner_text("#logs")
        assert "Click a task" in hint and "stdout and stderr" in hint
        assert pg.query_selector("#logs").bounding_box()["height"] < 200
        for chart in pg.query_selector_all("#nodes svg.load"):
            assert float(chart.get_attribute("data-span")) == pytest.approx(span, abs=2e-3)
            ticks = [float(t.get_attribute("data-t")) for t in chart.query_selector_all(".tick")]
            assert ticks and max(ticks) <= span + 1e-3
        pg.click("#task-1")
        pg.wait_for_function("document.querySelector('#logs-title').textContent == "
                             "'Logs of task 1'")
        assert "Click a task" not in pg.inner_text("#logs") and pg.errors == []


def test_2000_tasks_show_a_readable_overview(tmp_path):
    runs, run_id = _run(tmp_path, _two_thousand)
    mon = Monitor(runs, run_id).start()
    try:
        with browser.page(1400, 1000) as pg:
            pg.goto(mon.url)
            pg.wait_for_selector("#dag g.name[data-state]")
            pg.wait_for_selector("#dag-wrap[data-lod]")
            assert "one box per task name" in pg.inner_text("#dag-kind")
            assert pg.query_selector_all("#dag g.task") == []       # no 2,000 specks
            sizes = pg.evaluate(LABELS)
            assert sizes and min(sizes) >= 9.0, sizes
            names = {g.get_attribute("data-name"): g for g in pg.query_selector_all("#dag g.name")}
            assert set(names) == {"noop", "add", "nap", "chatty"}
            assert [t.text_content() for t in names["add"].query_selector_all("text")] == [
                "add", "999 done"]
            wide, tall = pg.evaluate(FILL)
            assert max(wide, tall) >= 0.85, (wide, tall)
            pg.screenshot(path=browser.artifact("monitor-2000.png"))
            assert pg.errors == []
    finally:
        mon.stop()


def test_report_draws_its_graph_without_graphviz(forty_five, tmp_path, monkeypatch):
    from taskflow.observe.graph import write_graph
    from taskflow.observe.report import report
    runs, run_id, _ = forty_five
    which = shutil.which
    monkeypatch.setattr(dotgraph.shutil, "which",
                        lambda name, *a, **k: None if name in ("dot", "neato") else which(name))
    with pytest.raises(dotgraph.NoGraphviz):
        dotgraph.render("digraph {}")
    out = str(tmp_path / "report.html")
    report(os.path.join(runs, run_id), out)
    page = open(out, encoding="utf-8").read()
    assert "<script src" not in page and "<link" not in page          # one self-contained file
    start = page.index("<svg", page.index('id="graph-box"'))
    root = ET.fromstring(page[start:page.index("</svg>", start) + 6])
    groups = list(root.iter("{http://www.w3.org/2000/svg}g"))
    assert {g.get("id") for g in groups} >= {f"task-{i}" for i in range(1, 46)}   # 45 <= 50
    assert len([g for g in groups if g.get("class") == "edge"]) > 40
    paths = write_graph(os.path.join(runs, run_id), str(tmp_path / "graph"))   # the CLI's
    assert "svg_error" not in paths and 'id="task-45"' in open(paths["svg"]).read()
    with browser.page(1400, 1000) as pg:
        pg.goto("file://" + out)
        box = pg.query_selector("#graph-box").bounding_box()
        assert box["width"] > 300 and box["height"] > 100
        assert len(pg.query_selector_all("#graph-box g.node")) == len(
            [g for g in groups if "node" in (g.get("class") or "")])
        pg.screenshot(path=browser.artifact("report-no-graphviz.png"), full_page=True)
        assert pg.errors == []
