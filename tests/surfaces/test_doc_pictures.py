"""The documentation's pictures, made from a real run so they never drift from the product.

A small ensemble forecast (tests/support/docs_forecast.py: 25 tasks on 2 local nodes, one
failed check the script goes on without) runs with ``taskflow run``; headless Chromium
photographs the web monitor while it runs and once it has ended, the HTML report
(``taskflow report --html``: its top, timeline, graph and resources), the graph
(``taskflow graph``'s SVG), and ``taskflow trace``'s Gantt chart is kept as it is written;
what ``taskflow status`` prints is kept as text (status.txt).

Nothing is compared pixel by pixel (times, ids and layouts vary from run to run): each
page is checked to show what its picture is for before the shot (the DOM's elements and
texts), and each picture to be a PNG of a sensible size with more than a few colours.
With ``TASKFLOW_UPDATE_PICTURES=1`` (``make pictures``) the pictures go to docs/images/,
which the pages of the site show; otherwise to a temporary directory, so a test run never
changes the checkout.
"""
from __future__ import annotations

import io
import os
import shutil
import struct
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

import pytest

from taskflow.journal import Journal

from support import browser
from support.paths import ROOT, TESTS

pytestmark = pytest.mark.skipif(shutil.which("dot") is None, reason="graphviz is not installed")

UPDATE = os.environ.get("TASKFLOW_UPDATE_PICTURES") == "1"
IMAGES = os.path.join(ROOT, "docs", "images")
SCRIPT = os.path.join(TESTS, "support", "docs_forecast.py")
TASKS = 26        # 3 days x (fetch, clean, check, 4 x simulate, summarise), boundary, publish
SVG = "{http://www.w3.org/2000/svg}"


def png_size(path: str) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    with open(path, "rb") as fh:
        head = fh.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", f"{path} is not a PNG"
    return struct.unpack(">II", head[16:24])


def keep(png: bytes, path: str, min_w: int, min_h: int) -> None:
    """Check a picture is one worth showing, then write it (fewer colours when Pillow is here:
    a palette PNG is a third of the size, which matters for files kept in git)."""
    try:
        from PIL import Image
    except ImportError:
        Image = None
    if Image is not None:
        img = Image.open(io.BytesIO(png)).convert("RGB")
        colours = img.getcolors(maxcolors=1 << 16)
        assert colours is None or len(colours) >= 16, f"{path}: {len(colours)} colours, nearly blank"
        out = io.BytesIO()
        img.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE) \
            .save(out, format="PNG", optimize=True)
        png = out.getvalue()
    with open(path, "wb") as fh:
        fh.write(png)
    w, h = png_size(path)
    assert w >= min_w and h >= min_h, f"{path} is {w}x{h}, smaller than {min_w}x{min_h}"
    assert os.path.getsize(path) >= 5_000, f"{path} is {os.path.getsize(path)} bytes"


@pytest.fixture(scope="module")
def pictures(tmp_path_factory) -> str:
    if UPDATE:
        os.makedirs(IMAGES, exist_ok=True)
        return IMAGES
    return str(tmp_path_factory.mktemp("pictures"))


def taskflow_cmd() -> list[str]:
    """The ``taskflow`` command beside this interpreter (as a user types it), else ``-m``."""
    exe = os.path.join(os.path.dirname(sys.executable), "taskflow")
    return [exe] if os.access(exe, os.X_OK) else [sys.executable, "-m", "taskflow"]


def taskflow_cli(*args: str, cwd: str, ok: tuple[int, ...] = (0,)) -> str:
    r = subprocess.run([*taskflow_cmd(), *args], cwd=cwd, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode in ok, f"taskflow {' '.join(args)}: exit {r.returncode}\n{r.stdout}{r.stderr}"
    return r.stdout


class Forecast:
    """``taskflow run forecast.py`` in a scratch directory, its boundary conditions held
    until :meth:`finish`, and a monitor serving the run."""

    def __init__(self, tmp: str) -> None:
        pytest.importorskip("flask", reason="the monitor extra is not installed")
        from taskflow.monitor import Monitor
        self.cwd = tmp
        self.runs = os.path.join(tmp, "runs")
        self.release = os.path.join(tmp, "release")
        shutil.copy(SCRIPT, os.path.join(tmp, "forecast.py"))
        env = {**os.environ, "FORECAST_HOLD": "release"}         # the tasks run in tmp too
        env.pop("TASKFLOW_RUN_DIR", None)
        self.proc = subprocess.Popen(
            [*taskflow_cmd(), "run", "--workers", "4", "--local-nodes", "2",
             "--run-dir", "runs", "--no-progress", "forecast.py"],
            cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.run_id = self._started(deadline=time.monotonic() + 60)
        self.run_dir = os.path.join(self.runs, self.run_id)
        self.mon = Monitor(self.runs, self.run_id).start()
        self.output: str | None = None

    def _started(self, deadline: float) -> str:
        while time.monotonic() < deadline:
            if os.path.isdir(self.runs):
                for d in os.listdir(self.runs):
                    if os.path.exists(os.path.join(self.runs, d, "journal.db")):
                        return d
            if self.proc.poll() is not None:
                pytest.fail(f"taskflow run ended before its journal was made:\n"
                            f"{self.proc.stdout.read() if self.proc.stdout else ''}")
            time.sleep(0.05)
        self.proc.kill()
        pytest.fail("taskflow run made no journal in 60 s")

    def finish(self) -> str:
        """Let the held task go, wait for the run's end; the script's output."""
        if self.output is None:
            open(self.release, "w").close()
            out, _ = self.proc.communicate(timeout=120)
            self.output = out
            # the script caught the failed check and went on: every other task ran
            assert "day 2 left unchecked" in out and "\n3,25.9,2.01\n" in out, out
        return self.output

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                self.finish()
        finally:
            self.mon.stop(grace=3.0)


@pytest.fixture(scope="module")
def forecast(tmp_path_factory):
    run = Forecast(str(tmp_path_factory.mktemp("forecast")))
    try:
        yield run
    finally:
        run.close()


def element(pg, selector: str) -> bytes:
    """A picture of one element of the page, taken from the whole page (not scrolled to it,
    so the report's sticky bar of links stays at the top, off the picture)."""
    pg.evaluate("window.scrollTo(0, 0)")
    box = pg.query_selector(selector).bounding_box()
    return pg.screenshot(full_page=True, clip=box)


def _count(pg, state: str) -> int:
    return pg.evaluate(f"document.querySelectorAll('#dag g.task[data-state=\"{state}\"]').length")


def test_the_monitor_live_and_finished(forecast, pictures):
    with browser.page(1400, 900) as pg:
        pg.goto(forecast.mon.url + "&select=20")      # the boundary conditions: held
        # live: everything not waiting for the boundary conditions ran, day 2's check failed
        pg.wait_for_function(f"document.querySelectorAll('#dag g.task').length == {TASKS}")
        pg.wait_for_selector('#task-20[data-state="RUNNING"]', timeout=60000)
        pg.wait_for_function("document.querySelectorAll('#dag g.task[data-state=\"DONE\"]')"
                             ".length == 18", timeout=60000)
        assert "boundary" in pg.text_content("#task-20")
        assert _count(pg, "FAILED") == 1 and _count(pg, "RUNNING") == 1
        pg.wait_for_function("document.querySelector('#logs').innerText"
                             ".includes('waiting for the global model')")
        pg.wait_for_selector("#nodes svg.cpu polyline.series-cpu", state="attached")
        assert pg.inner_text("#state") == "running"
        assert len(pg.query_selector_all("#nodes svg.cpu")) == 2            # two nodes
        assert len(pg.query_selector_all("#gantt rect.bar")) >= 20
        keep(pg.screenshot(), os.path.join(pictures, "monitor-live.png"), 1400, 900)
        # finished: the held task let go, the run ended; the failed check's logs
        forecast.finish()
        pg.wait_for_function("document.body.dataset.ended == '1'", timeout=30000)
        with Journal(forecast.run_dir) as j:
            (failed,) = [t["id"] for t in j.tasks() if t["state"] == "FAILED"]
        pg.click(f"#task-{failed}")
        pg.wait_for_function("document.querySelector('#logs').innerText.includes('ValueError')")
        assert _count(pg, "DONE") == TASKS - 1 and _count(pg, "RUNNING") == 0
        assert pg.inner_text("#logs-title") == f"Logs of task {failed}"
        assert "readings out of range" in pg.inner_text("#logs")
        keep(pg.screenshot(), os.path.join(pictures, "monitor-finished.png"), 1400, 900)
        assert pg.errors == []


def test_the_html_report(forecast, pictures, tmp_path):
    forecast.finish()
    html = str(tmp_path / "report.html")
    taskflow_cli("report", forecast.run_id, "--run-dir", "runs", "--html", html, cwd=forecast.cwd)
    with browser.page(1400, 1000) as pg:
        pg.goto("file://" + html)
        # the top: the run's header and its failure, with the line of the script that raised
        head = pg.inner_text("header.run")
        assert "forecast.py" in head and "exit status" in head
        failure = pg.inner_text("#failures .failure")
        assert "task check" in failure and "readings out of range" in failure
        keep(pg.screenshot(), os.path.join(pictures, "report-top.png"), 1400, 1000)
        # the timeline: a bar per task on the 4 slots of the 2 nodes
        assert len(pg.query_selector_all("#timeline rect.bar")) == TASKS
        keep(element(pg, "#timeline"), os.path.join(pictures, "report-timeline.png"), 1000, 200)
        # the graph, one box per task (25 <= 50)
        assert pg.get_attribute("#graph-box", "data-kind") == "tasks"
        assert len(pg.query_selector_all("#graph-box g.task")) == TASKS
        keep(element(pg, "#graph"), os.path.join(pictures, "report-graph.png"), 1000, 200)
        # the resources per task name: a box plot per name
        for key in ("seconds", "cpu", "rss"):
            assert len(pg.query_selector_all(f"#plot-{key} g.box")) >= 5, key
        keep(element(pg, "#resources"), os.path.join(pictures, "report-resources.png"), 1000, 300)
        assert pg.errors == []


def test_the_graph(forecast, pictures, tmp_path):
    forecast.finish()
    taskflow_cli("graph", forecast.run_id, "--run-dir", "runs", "-o", str(tmp_path),
                 cwd=forecast.cwd)
    svg = tmp_path / "graph.svg"
    root = ET.parse(svg).getroot()
    nodes = [g for g in root.iter(SVG + "g") if "node" in (g.get("class") or "").split()]
    texts = {t.text for t in root.iter(SVG + "text")}
    assert len(nodes) == TASKS and {"fetch", "simulate", "publish"} <= texts
    with browser.page(1400, 1000) as pg:
        pg.goto(svg.as_uri())
        box = pg.query_selector("svg").bounding_box()
        assert box["width"] > 300 and box["height"] > 200
        keep(pg.query_selector("svg").screenshot(), os.path.join(pictures, "graph.png"), 300, 200)


def test_the_gantt_chart(forecast, pictures, tmp_path):
    pytest.importorskip("matplotlib")
    forecast.finish()
    taskflow_cli("trace", forecast.run_id, "--run-dir", "runs", "-o", str(tmp_path),
                 cwd=forecast.cwd)
    gantt = tmp_path / "gantt.png"
    w, h = png_size(str(gantt))
    assert w >= 600 and h >= 200
    import json
    trace = json.loads((tmp_path / "trace.json").read_text())
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert len(spans) == TASKS
    keep(gantt.read_bytes(), os.path.join(pictures, "gantt.png"), 600, 200)



def test_the_status_text(forecast, pictures):
    """``taskflow status`` stays text: docs/guide/seeing-a-run.md includes what it printed."""
    forecast.finish()
    out = taskflow_cli("status", forecast.run_id, "--run-dir", "runs", cwd=forecast.cwd,
                       ok=(0, 1))                    # 1: a run that failed
    assert out.startswith(f"run {forecast.run_id}: ") and f"tasks: {TASKS}" in out
    assert "nodes: local-0 (2 slots), local-1 (2 slots)" in out
    assert "task 11 check on local-" in out and "readings out of range" in out
    with open(os.path.join(pictures, "status.txt"), "w") as fh:
        fh.write(out)
