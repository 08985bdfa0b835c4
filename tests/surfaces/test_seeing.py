"""Seeing a run as a user does: the monitor and the report in headless Chromium at 1,400 px,
the graph's size on a wide fan-out, the report of a large run aggregated.

Screenshots go to test-artifacts/ (monitor-start/-middle/-end.png, report.png); the
asserts are on what a person must see: every box of the fitted graph inside its panel, a
running task inside the visible panel, axis labels on the node charts, a task's logs in
view, the failure and its error before any chart.
"""
from __future__ import annotations

import os
import shutil
import xml.etree.ElementTree as ET

import pytest

import taskflow
from taskflow.journal import Journal
from taskflow.monitor import Monitor
from taskflow.observe import dotgraph, layout, runinfo
from taskflow.observe.distributions import stats

from support import browser
from support import observe_tasks as ot

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz is not installed")

# -- the 60-task run -----------------------------------------------------------------------


class Sixty:
    """A run of 60 tasks: a root, a fan of 50, 6 chatty ones, one that runs until released,
    one after it and one that fails."""

    def __init__(self, tmp: str) -> None:
        self.release = os.path.join(tmp, "release")
        self.rt = taskflow.Runtime(workers=2, run_dir=os.path.join(tmp, "runs"),
                                   echo_logs=False).start()
        root = ot.nap(0.05)
        self.fan = [ot.nap(0.01, root) for _ in range(50)]
        self.chatty = [ot.chatty(3) for _ in range(6)]
        self.hold = ot.hold_until(self.release)
        self.last = ot.nap(0.01, self.hold, *self.fan[:3])
        self.boom = ot.boom(7)
        self.mon = Monitor(os.path.dirname(self.rt.run_dir), self.rt.run_id).start()

    def finish(self) -> None:
        if self.rt.stopped:
            return
        open(self.release, "w").close()
        taskflow.wait_on(self.last)
        self.rt.wait_all()          # boom's failure is never met here: the run fails
        self.rt.stop()
        self.mon.stop(grace=3.0)


@pytest.fixture(scope="module")
def sixty(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sixty")
    old = os.getcwd()
    os.chdir(tmp)
    run = Sixty(str(tmp))
    try:
        yield run
    finally:
        try:
            run.finish()
        finally:
            os.chdir(old)


def _inside(inner: dict, outer: dict, slack: float = 1.0) -> bool:
    return (inner["x"] >= outer["x"] - slack and inner["y"] >= outer["y"] - slack
            and inner["x"] + inner["width"] <= outer["x"] + outer["width"] + slack
            and inner["y"] + inner["height"] <= outer["y"] + outer["height"] + slack)


@needs_dot
def test_monitor_of_a_60_task_run_at_start_middle_and_end(sixty):
    hold_id = 58                # ids go in submission order: root, 50, 6, then the held task
    with browser.page() as pg:
        pg.goto(sixty.mon.url)
        pg.wait_for_function("document.querySelectorAll('#dag g.task').length == 60")
        pg.screenshot(path=browser.artifact("monitor-start.png"))
        # start: the whole graph fits its panel
        panel = pg.query_selector("#dag-wrap").bounding_box()
        boxes = [g.bounding_box() for g in pg.query_selector_all("#dag g.task")]
        assert len(boxes) == 60 and all(_inside(b, panel) for b in boxes)
        assert panel["width"] <= 1400
        # middle: most of the fan is done, the held task runs: it is in view (a task the
        # node queued behind it waits with it)
        pg.wait_for_function("document.querySelectorAll('#dag g.task[data-state=\"DONE\"]')"
                             ".length >= 40", timeout=60000)
        pg.wait_for_selector(f'#task-{hold_id}[data-state="RUNNING"]')
        assert "hold_until" in pg.text_content(f"#task-{hold_id}")
        assert _inside(pg.query_selector(f"#task-{hold_id}").bounding_box(), panel)
        # zoomed in and dragged away, the task is out of view; "follow" brings it back
        for _ in range(4):
            pg.click("#dag-in")
        assert not pg.is_checked("#dag-follow")
        cx, cy = panel["x"] + panel["width"] / 2, panel["y"] + panel["height"] / 2
        pg.mouse.move(cx, cy)
        pg.mouse.down()
        pg.mouse.move(cx + 40, cy + 40, steps=4)
        pg.mouse.move(cx + 600, cy + 400, steps=10)
        pg.mouse.up()
        assert not _inside(pg.query_selector(f"#task-{hold_id}").bounding_box(), panel)
        pg.check("#dag-follow")
        pg.wait_for_function(
            "(() => { const a = document.getElementById('task-%d').getBoundingClientRect(),"
            " p = document.getElementById('dag-wrap').getBoundingClientRect();"
            " return a.left >= p.left && a.right <= p.right && a.top >= p.top &&"
            " a.bottom <= p.bottom; })()" % hold_id)
        pg.click("#dag-fit")
        # node charts: axes with units; no GPU chart on a node without one
        pg.wait_for_selector("#nodes svg.cpu polyline.series-cpu", state="attached",
                             timeout=30000)
        cpu_labels = [t.text_content() for t in pg.query_selector_all("#nodes svg.cpu text")]
        mem_labels = [t.text_content() for t in pg.query_selector_all("#nodes svg.mem text")]
        assert "CPU (%)" in cpu_labels and "100 %" in cpu_labels and any(
            x.endswith(" s") for x in cpu_labels)
        assert "memory (GB)" in mem_labels and any(x.endswith(" GB") for x in mem_labels)
        if shutil.which("nvidia-smi") is None:
            assert pg.query_selector("#nodes svg.gpu") is None
        # a task far down the table: its logs are in view beside it
        last_id = int(pg.get_attribute("#tasks tbody tr:last-child", "data-id"))
        row = pg.locator(f'#tasks tbody tr[data-id="{last_id}"]')   # found again at each try:
        row.scroll_into_view_if_needed()                             # the table is redrawn
        row.click()                                                  # as the run goes on
        pg.wait_for_function(f"document.querySelector('#logs-title').textContent == "
                             f"'Logs of task {last_id}'")
        box = pg.query_selector("#logs-panel").bounding_box()
        assert box["y"] >= 0 and box["y"] + 100 <= 1000, box        # on screen
        pg.screenshot(path=browser.artifact("monitor-middle.png"))
        # end: the held task released, the run stopped; the page sees its end
        sixty.finish()
        pg.wait_for_function("document.body.dataset.ended == '1'", timeout=30000)
        assert pg.query_selector_all('#dag g.task[data-state="RUNNING"]') == []
        assert pg.get_attribute(f"#task-{hold_id}", "data-state") == "DONE"
        pg.screenshot(path=browser.artifact("monitor-end.png"), full_page=True)
        assert pg.errors == []


@needs_dot
def test_report_of_a_failed_run_shows_the_failure_first(sixty, tmp_path):
    from taskflow.observe.report import report
    sixty.finish()
    out = str(tmp_path / "report.html")
    md = report(sixty.rt.run_dir, out)
    assert md.index("## Failed tasks (1)") < md.index("## Per task name")
    assert "ValueError: boom 7" in md and f"taskflow logs {sixty.rt.run_id}" in md
    page = open(out, encoding="utf-8").read()
    assert "<script src" not in page and "<link" not in page        # one self-contained file
    with browser.page() as pg:
        pg.goto("file://" + out)
        pg.screenshot(path=browser.artifact("report.png"), full_page=True)
        assert pg.errors == []
        failure = pg.query_selector("#failures .failure")
        text = failure.inner_text()
        assert "task boom" in text and "ValueError: boom 7" in text and "in your code" in text
        assert 'raise ValueError(f"boom {x}")' in text
        first_chart = pg.query_selector("svg.chart").bounding_box()
        assert failure.bounding_box()["y"] + failure.bounding_box()["height"] <= first_chart["y"]
        # the header: what ran, where, when, how it ended
        head = pg.inner_text("header.run")
        for what in ("exit status", "command line", "working directory", "user", "host",
                     "started", "ended", "duration"):
            assert what in head
        assert pg.inner_text("#run-state") == "failed"
        # nothing wider than the page; the graph fitted to it, every box inside it
        assert pg.evaluate("document.documentElement.scrollWidth") <= 1400
        graph = pg.query_selector("#graph-box").bounding_box()
        assert graph["x"] + graph["width"] <= 1400
        assert all(_inside(g.bounding_box(), graph) for g in pg.query_selector_all(
            "#graph-box g.name"))
        assert pg.get_attribute("#graph-box", "data-kind") == "names"    # 60 tasks > 50
        pg.click("#graph-box")                                            # full size
        assert "full" in pg.get_attribute("#graph-box", "class")
        # resources per name and the timeline with a bar per task, hover text on each
        for key in ("seconds", "cpu", "rss"):
            assert pg.query_selector(f"#plot-{key} g.box") is not None
        bars = pg.query_selector_all("#timeline rect.bar")
        assert len(bars) >= 59
        assert any("peak memory" in (b.text_content() or "") for b in bars)


# -- the graph's size ----------------------------------------------------------------------

@pytest.fixture(scope="module")
def fanout(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("fan")
    with taskflow.Runtime(workers=2, run_dir=str(tmp / "runs"), echo_logs=False) as rt:
        parts = [ot.noop(i) for i in range(1000)]
        total = ot.nap(0.0, *parts)
        taskflow.wait_on(total)
    return rt


def _pt(svg_path: str) -> tuple[float, float]:
    root = ET.parse(svg_path).getroot()
    return float(root.get("width").rstrip("pt")), float(root.get("height").rstrip("pt"))


@needs_dot
def test_graph_of_a_1000_task_fanout_stays_within_4000_pt(fanout, tmp_path):
    from taskflow.observe.graph import write_graph
    paths = write_graph(fanout.run_dir, str(tmp_path / "tasks"), kind="tasks")
    w, h = _pt(paths["svg"])
    assert w <= 4000 and h <= 4000, (w, h)
    assert w >= 1000 and h >= 500          # a block, not a row, and not shrunk to a stamp
    root = ET.parse(paths["svg"]).getroot()
    assert len([g for g in root.iter("{http://www.w3.org/2000/svg}g")
                if g.get("class") == "node task"]) == 1001
    # by default (above 300 tasks) the graph of names: two boxes and one arrow saying 1000
    paths = write_graph(fanout.run_dir, str(tmp_path / "auto"))
    assert paths["kind"] == "names"
    svg = open(paths["svg"]).read()
    assert ">1000 done<" in svg and "> 1000<" in svg and max(_pt(paths["svg"])) < 600


# -- a large run's report is aggregated ---------------------------------------------------

def test_report_of_a_large_run_aggregates_and_says_so(fanout, tmp_path, monkeypatch):
    from taskflow.observe import distributions, report, timeline
    monkeypatch.setattr(timeline, "BARS_MAX", 100)
    monkeypatch.setattr(distributions, "NAMES_MAX", 1)
    out = str(tmp_path / "big.html")
    report.report(fanout.run_dir, out)
    page = open(out, encoding="utf-8").read()
    assert "too many for one bar each" in page and 'class="bar"' not in page
    assert "other names (1)" in page and "1 more share the last one" in page
    assert len(page) < 400_000


# -- the parts -----------------------------------------------------------------------------

def test_layout_wraps_a_wide_layer_into_a_block():
    ids = list(range(1002))
    edges = [(0, i) for i in range(1, 1001)] + [(i, 1001) for i in range(1, 1001)]
    labels = {i: f"noop\n#{i} done" for i in ids}
    pos, width, height = layout.place(ids, edges, labels)
    rows = {y for x, y in (pos[i] for i in range(1, 1001))}
    assert 20 <= len(rows) <= 60 and width <= 4000 and height <= 4000
    assert pos[0][1] < min(rows) < max(rows) < pos[1001][1]         # above, block, below
    assert [len(x) for x in layout.layers(ids, edges)] == [1, 1000, 1]
    text, engine = dotgraph.task_dot([{"id": i, "name": "noop", "state": "DONE"} for i in ids],
                                     edges, {"noop": "#abcdef"})
    assert engine == "neato" and text.count('pos="') == 1002


def test_box_statistics():
    s = stats([1, 2, 3, 4, 100])
    assert (s["min"], s["q1"], s["med"], s["q3"], s["max"]) == (1, 2, 3, 4, 100)
    assert s["hi"] == 4 and s["outliers"] == [100] and s["mean"] == 22
    assert stats([]) is None


def test_the_script_and_its_arguments_in_a_command_line():
    assert runinfo.script_of(["/v/bin/taskflow", "run", "-w", "2", "wf.py", "a", "-x"]) == \
        ("wf.py", ["a", "-x"])
    assert runinfo.script_of(["wf.py", "in.txt"]) == ("wf.py", ["in.txt"])
    assert runinfo.script_of(["/usr/bin/pytest", "-q"]) == (None, ["-q"])
    assert runinfo.exit_status({"state": "finished"}) == "0"
    assert runinfo.exit_status({"state": "failed", "exit_code": 3}) == "3"


def test_report_header_names_the_journal_state_and_reason(fanout, tmp_path):
    with Journal(fanout.run_dir) as j:
        h = runinfo.header(j)
    assert h["state"] == "finished" and h["exit_status"] == "0" and h["counts"]["DONE"] == 1001
    assert h["user"] and h["host"] and h["start"] <= h["end"]
    assert h["slots"] == 2 and h["script"] is None or h["script"].endswith(".py")


def test_report_header_shows_the_reason_the_journal_gives(fanout, tmp_path):
    """The run's state and reason are the journal's (decided by the run): shown as they are."""
    import sqlite3
    from taskflow.observe.report import report
    run_dir = str(tmp_path / os.path.basename(fanout.run_dir))
    shutil.copytree(fanout.run_dir, run_dir)
    with sqlite3.connect(os.path.join(run_dir, "journal.db")) as db:
        db.execute("UPDATE run SET state='failed', reason='the script raised "
                   "RuntimeError at crash.py:6'")
    md = report(run_dir, str(tmp_path / "r.html"))
    assert "| state | failed: the script raised RuntimeError at crash.py:6 |" in md
    page = (tmp_path / "r.html").read_text()
    assert '<p class="reason" id="reason">the script raised RuntimeError at crash.py:6</p>' in page
