"""Pictures and the report: graph (.dot/.svg), Chrome trace, Gantt, C/W/M figures."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

import taskflow
from taskflow.cli import main
from taskflow.journal import Journal
from taskflow.observe.graph import write_graph
from taskflow.observe.report import busy_integral, figures, report
from taskflow.observe.trace import chrome_trace, write_trace

from support import observe_tasks as ot


@pytest.fixture(scope="module")
def known_run(tmp_path_factory):
    """a, b (0.4 s each) in parallel; c (0.3 s) after both; d (0.2 s) alone; 2 slots.

    C = 1.3 s; the critical path is a or b then c (0.7 s); d has to wait for a slot.
    """
    tmp = tmp_path_factory.mktemp("known")
    old = os.getcwd()
    os.chdir(tmp)
    try:
        with taskflow.Runtime(workers=2, run_dir=str(tmp / "runs"), echo_logs=False) as rt:
            a = ot.nap(0.4)
            b = ot.nap(0.4)
            c = ot.nap(0.3, a, b)
            d = ot.nap(0.2)
            with pytest.raises(taskflow.TaskError):
                taskflow.wait_on(ot.boom(0))
            taskflow.wait_on([c, d])
    finally:
        os.chdir(old)
    return rt


def test_busy_integral_exact():
    iv = [(0.0, 2.0), (1.0, 3.0), (5.0, 6.0)]
    assert busy_integral(iv, 0.0, 6.0) == pytest.approx(5.0)
    assert busy_integral(iv, 1.5, 2.5) == pytest.approx(1.5)
    assert busy_integral([], 0.0, 1.0) == 0.0


def test_report_figures_on_known_workflow(known_run):
    with Journal(known_run.run_dir) as j:
        f = figures(j)
        ids = {t["id"]: t for t in j.tasks()}
    assert f["slots"] == 2 and f["tasks"] == 5
    assert 1.3 <= f["C"] < 1.3 + 0.5                 # sleeps never end early
    assert f["L"] >= 0.7 and f["L"] < f["C"]
    path = f["critical_path"]
    assert path[-1] == 3 and path[0] in (1, 2) and len(path) == 2
    assert f["lower_bound"] == pytest.approx(max(f["C"] / 2, f["L"]))
    assert f["M"] >= f["lower_bound"] * 0.999
    assert f["C_over_W"] == pytest.approx(f["M"], rel=1e-6)      # M = C / W
    assert 0 < f["W"] <= 2.0 + 1e-9
    assert f["per_name"]["nap"]["count"] == 4 and f["per_name"]["nap"]["DONE"] == 4
    assert f["per_name"]["boom"]["FAILED"] == 1
    assert f["per_name"]["nap"]["mean_run"] >= 1.3 / 4
    assert f["longest"][0]["seconds"] >= 0.4 and f["longest"][0]["name"] == "nap"
    assert f["queued"] > 0.0 and f["running"] >= 1.3
    assert ids[4]["t_start"] >= min(ids[1]["t_end"], ids[2]["t_end"]) - 1e-3   # d waited
    md = report(known_run.run_dir)
    for s in ("C, slot-seconds the tasks held", "W = (1/M)", "C / W", "critical path", "| nap | 4 | 4 |",
              "Time queued vs running", "Longest tasks"):
        assert s in md


def test_graph_dot_parses_and_renders(known_run, tmp_path):
    paths = write_graph(known_run.run_dir, str(tmp_path))
    dot = open(paths["dot"]).read()
    assert dot.startswith("digraph") and "t1 -> t3;" in dot and "t2 -> t3;" in dot
    from taskflow.observe.palette import STATE_COLOURS
    failed = next(line for line in dot.splitlines() if line.startswith("  t5 "))
    assert f'fillcolor="{STATE_COLOURS["FAILED"]}"' in failed     # the failed task stands out
    if shutil.which("dot") is None:
        pytest.skip("graphviz is not installed")
    out = subprocess.run(["dot", "-Tsvg", paths["dot"]], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    root = ET.fromstring(open(paths["svg"]).read())
    titles = [e.text for e in root.iter("{http://www.w3.org/2000/svg}title")]
    assert {"t1", "t2", "t3", "t4", "t5"} <= set(titles)


def test_trace_json_and_gantt(known_run, tmp_path):
    paths = write_trace(known_run.run_dir, str(tmp_path))
    data = json.load(open(paths["trace"]))
    ev = data["traceEvents"]
    spans = [e for e in ev if e["ph"] == "X"]
    assert len(spans) == 5
    assert {e["tid"] for e in spans} <= {0, 1}        # one track per slot of the 2-slot node
    names = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {"slot 0", "slot 1"}
    for e in spans:
        assert e["dur"] >= 0 and e["ts"] >= 0
    by_tid: dict = {}
    for e in sorted(spans, key=lambda e: e["ts"]):     # no two tasks overlap on one slot
        last = by_tid.get(e["tid"])
        assert last is None or e["ts"] >= last - 1.0
        by_tid[e["tid"]] = e["ts"] + e["dur"]
    pytest.importorskip("matplotlib")
    with open(paths["gantt"], "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"
    with Journal(known_run.run_dir) as j:
        assert chrome_trace(j)["otherData"]["run_id"] == known_run.run_id


def test_cli_report_graph_trace(known_run, tmp_path):
    root = os.path.dirname(known_run.run_dir)
    cli = CliRunner()
    r = cli.invoke(main, ["report", known_run.run_id, "--run-dir", root,
                          "--html", str(tmp_path / "r.html")])
    assert r.exit_code == 0, r.output
    # the page was asked for: its path is said, the markdown is not printed too
    assert f"html: {tmp_path / 'r.html'}" in r.output and "# taskflow run" not in r.output
    md = cli.invoke(main, ["report", known_run.run_id, "--run-dir", root])
    assert md.exit_code == 0 and f"# taskflow run {known_run.run_id}" in md.output
    page = open(tmp_path / "r.html").read()
    assert "<table>" in page and "<svg" in page and "boom 0" in page
    assert "<script src" not in page and "<link" not in page and "http://" not in page.replace(
        'xmlns="http://www.w3.org/2000/svg"', "").replace("http://www.w3.org/1999/xlink", "")
    r = cli.invoke(main, ["graph", "--run-dir", root, "-o", str(tmp_path / "g")])
    assert r.exit_code == 0 and os.path.isfile(tmp_path / "g" / "graph.dot")
    r = cli.invoke(main, ["trace", "--run-dir", root, "-o", str(tmp_path / "t")])
    assert r.exit_code == 0 and os.path.isfile(tmp_path / "t" / "trace.json")


def test_taskflow_run_g_t(tmp_path):
    script = tmp_path / "wf.py"
    script.write_text("from taskflow import task, wait_on\n@task(returns=int)\n"
                      "def inc(x):\n    return x + 1\nwait_on(inc(inc(1)))\n")
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"))
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "-g", "--trace", "-w", "2",
                        str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    (run_id,) = os.listdir(tmp_path / "runs")
    files = set(os.listdir(tmp_path / "runs" / run_id))
    assert {"journal.db", "graph.dot", "trace.json"} <= files
    assert "graph.dot" in r.stderr and "trace.json" in r.stderr


def test_run_monitor_option_value_is_optional(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("")
    cmd = main.commands["run"]

    def parse(*args):
        return cmd.make_context("run", list(args)).params
    p = parse("--monitor", str(script))
    assert p["monitor"] == 0 and p["script"] == str(script)
    assert parse("--monitor", "8123", str(script))["monitor"] == 8123
    p = parse("-w", "2", "--monitor", str(script), "--monitor", "x")
    assert p["monitor"] == 0 and p["workers"] == 2 and p["script_args"] == ("--monitor", "x")
    assert parse(str(script))["monitor"] is None
