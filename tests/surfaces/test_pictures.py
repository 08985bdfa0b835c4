"""The run's pictures: names kept apart by colour, labels without escape artefacts,
a task that held several slots drawn on each, the Gantt legend beside the bars."""
from __future__ import annotations

import itertools
import os
import shutil
import xml.etree.ElementTree as ET

import pytest

import taskflow
from taskflow.journal import Journal
from taskflow.observe import palette
from taskflow.observe.graph import build, to_dot, write_graph
from taskflow.observe.report import figures
from taskflow.observe.trace import chrome_trace, slot_intervals

from support import observe_tasks as ot

SVG = "{http://www.w3.org/2000/svg}"


def _min_distance(colours: list[str]) -> float:
    pts = [palette.oklab(c) for c in colours]
    return min(palette._dist2(a, b) ** 0.5 for a, b in itertools.combinations(pts, 2))


def test_palette_keeps_names_apart_at_any_count():
    # OKLab distance 0.02 is about one just-noticeable difference
    for n, floor in ((12, 0.10), (23, 0.08), (40, 0.05), (256, 0.02)):
        names = [f"task_{i}" for i in range(n)]
        col = palette.colours(names)
        assert len(set(col.values())) == n
        assert _min_distance(list(col.values())) > floor, n
    # the NMMB example's 23 names: umo_model and plot_day no longer share a colour
    nmmb = ["init", "smmount", "landuse", "deeptemperature", "roughness", "albedo", "snowalbedo",
            "vegfrac", "soiltype", "stdh", "dust_source", "seaice", "gfdlco2", "lookup_aerosol",
            "degrib", "prep_winds", "prep_soil", "prep_bc", "umo_model", "post_regrid",
            "post_diag", "plot_day", "animate"]
    col = palette.colours(nmmb)
    assert col["umo_model"] != col["plot_day"] and len(set(col.values())) == 23
    # a name keeps its colour from run to run (same names), whatever their order
    assert palette.colours(list(reversed(nmmb))) == col
    # every fill is light enough for black text
    assert all(palette.text_colour(c) == "#000000" for c in col.values())


@pytest.fixture(scope="module")
def wide_run(tmp_path_factory):
    """On 2 slots: a (0.3 s) and b (0.3 s) side by side, then w holding both slots (0.4 s)."""
    tmp = tmp_path_factory.mktemp("wide")
    old = os.getcwd()
    os.chdir(tmp)
    try:
        with taskflow.Runtime(workers=2, run_dir=str(tmp / "runs"), echo_logs=False) as rt:
            a = ot.nap(0.3)
            b = ot.nap(0.3)
            taskflow.wait_on(ot.wide_nap(0.4, a, b))
    finally:
        os.chdir(old)
    return rt


def test_multi_slot_task_is_on_every_slot_it_held(wide_run):
    with Journal(wide_run.run_dir) as j:
        ran, slots = slot_intervals(j)
        trace = chrome_trace(j)
        f = figures(j)
        tasks = {t["id"]: t for t in j.tasks()}
        assert j.placements()[3] == [("local", 2)]
    assert slots == {"local": 2}                       # no lane added for the wide task
    wide = next(t for t in ran if t["id"] == 3)
    assert sorted(wide["lanes"]) == [("local", 0), ("local", 1)]
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X" and e["args"]["id"] == 3]
    assert sorted(e["tid"] for e in spans) == [0, 1] and spans[0]["args"]["slots"] == 2
    # C counts the wide task's run time twice: slot-seconds, not task-seconds
    dur = {i: t["t_end"] - t["t_start"] for i, t in tasks.items()}
    assert f["C"] == pytest.approx(dur[1] + dur[2] + 2 * dur[3], rel=1e-6)
    assert f["C_over_W"] == pytest.approx(f["M"], rel=1e-6)        # M = C / W still holds
    assert f["W"] <= 2.0 + 1e-9 and f["utilisation"] <= 1.0 + 1e-9


def test_graph_labels_have_no_escape_artefacts(wide_run, tmp_path):
    with Journal(wide_run.run_dir) as j:
        dot = to_dot(build(j))
    assert 'label="nap\\n#1 done"' in dot and "\\\\n" not in dot
    if shutil.which("dot") is None:
        pytest.skip("graphviz is not installed")
    paths = write_graph(wide_run.run_dir, str(tmp_path))
    texts = [e.text or "" for e in ET.parse(paths["svg"]).getroot().iter(SVG + "text")]
    assert "nap" in texts and "#1 done" in texts and "wide_nap" in texts
    assert not any("\\n" in t for t in texts)


def test_gantt_legend_is_outside_the_bars(tmp_path):
    pytest.importorskip("matplotlib")
    from taskflow.observe.trace import gantt_figure
    # 23 names on 2 slots: the legend used to cover the bars
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), echo_logs=False) as rt:
        futs = [ot.named(f"name_{i:02d}")(0.01) for i in range(23)]
        taskflow.wait_on(futs)
    with Journal(rt.run_dir) as j:
        fig = gantt_figure(j)
    fig.canvas.draw()
    (ax,) = fig.axes
    legend = ax.get_legend()
    r = fig.canvas.get_renderer()
    lb, ab = legend.get_window_extent(r), ax.get_window_extent(r)
    assert lb.x0 >= ab.x1                                  # entirely to the right of the axes
    assert len(legend.get_texts()) == 23
    faces = {p.get_facecolor() for p in legend.get_patches()}
    assert len(faces) == 23


def test_ready_is_journaled_for_a_task_that_waited_for_its_inputs(wide_run):
    with Journal(wide_run.run_dir) as j:
        t = j.task(3)
        first = j.task(1)
    states = [x["state"] for x in t["transitions"]]
    assert states[:2] == ["SUBMITTED", "READY"] and "RUNNING" in states and states[-1] == "DONE"
    ready = next(x["t"] for x in t["transitions"] if x["state"] == "READY")
    assert first["t_end"] - 1e-3 <= ready <= t["t_dispatch"] + 1e-3
    # a task with nothing to wait for is ready when submitted: no READY row of its own
    assert [x["state"] for x in first["transitions"]].count("READY") == 0


def test_a_byte_axis_has_whole_ticks():
    """A report's bytes axis over 0..1 B read "0 B 0 B 0 B 1 B 1 B 1 B"."""
    from taskflow.observe.distributions import fmt_bytes
    from taskflow.observe.svgcharts import boxplots, nice_ticks
    assert nice_ticks(0, 1) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(0, 1, whole=True) == [0.0, 1.0]
    stats = {"n": 3, "lo": 0, "q1": 0, "med": 1, "q3": 1, "hi": 1, "mean": 0.6, "min": 0,
             "max": 1, "outliers": []}
    svg = boxplots([("a", stats, "#ccc")], fmt_bytes, "bytes written", whole=True)
    import re
    assert re.findall(r">([^<]* B)</text>", svg) == ["0 B", "1 B"]
