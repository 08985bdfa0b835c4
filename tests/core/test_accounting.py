"""The SPA accounting in the run report: w(t) from node joins and leaves, W, C/W, job waits.

A real run on local agents: one node at the start, a second one joining the
running runtime (as a Slurm pilot would, with a job id and its submit/start
times), then the first one draining on SIGTERM. The expected figures are
recomputed here from the journal's own rows with plain arithmetic.
"""
from __future__ import annotations

import os
import signal
import sys
import time

from support import tasks_lib as L
import taskflow
from taskflow import wait_on
from taskflow.journal.reader import Journal
from taskflow.providers.local import LocalProvider
from taskflow.observe import report
from support.waiting import until as _until


def test_report_shows_workers_held_and_job_waits(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    extra = LocalProvider(1, name="joiner")
    with taskflow.Runtime(providers=[LocalProvider(1, name="first")],
                          run_dir=str(tmp_path / "runs"), echo_logs=False) as rt:
        wait_on([L.nap_marked(i, 0.1, str(marks)) for i in range(3)])
        config = {"sys_path": [p for p in sys.path if p], "cwd": os.getcwd(),
                  "data_dir": rt.data_dir, "run_id": rt.run_id}
        (h,) = extra.start(config, 30)
        h.job_id = "4242"                             # as the Slurm provider sets them
        submitted = time.time() - 5.0
        h.info.update(job_submitted=submitted, job_started=submitted + 3.5)
        rt.add_node(h)
        _until(lambda: len(rt.nodes) == 2, 20, "the second node to join")
        wait_on([L.nap_marked(10 + i, 0.1, str(marks)) for i in range(4)])
        first = rt.nodes[0]
        os.kill(first.info["pid"], signal.SIGTERM)     # drains, then leaves
        _until(lambda: not first.alive, 20, "the first node to leave")
        wait_on([L.nap_marked(20 + i, 0.1, str(marks)) for i in range(3)])
        run_dir = rt.run_dir
    extra.stop()

    with Journal(run_dir) as j:
        f = report.figures(j)
        nodes = {n["name"]: n for n in j.nodes()}
        tasks = j.tasks()
    lo = min(t["t_submit"] for t in tasks)
    hi = max(t["t_end"] for t in tasks)
    a, b = nodes["first"], nodes["joiner"]
    assert a["t_lost"] and a["reason"].startswith("left: SIGTERM")     # the leave is journaled
    assert b["info"]["job_id"] == "4242" and not b["t_lost"]
    # w(t): 1 slot, 2 once the joiner is in, 1 after the first left
    steps = [w for _, w in f["w_curve"]]
    assert steps[-3:] == [1, 2, 1]
    times = [t for t, _ in f["w_curve"]]
    assert abs(times[-2] - b["t_join"]) < 1e-6 and abs(times[-1] - a["t_lost"]) < 1e-6
    held = (min(a["t_lost"], hi) - max(a["t_join"], lo)) + (hi - max(b["t_join"], lo))
    M = hi - lo
    assert abs(f["M"] - M) < 1e-6
    assert abs(f["W_held"] - held / M) < 1e-6
    C = sum(t["t_end"] - t["t_start"] for t in tasks)
    assert abs(f["C_over_W_held"] - C / (held / M)) < 1e-6
    assert 0 < f["utilisation"] <= 1.0
    (job,) = f["jobs"]
    assert job["job_id"] == "4242" and job["nodes"] == ["joiner"]
    assert abs(job["queue_wait"] - 3.5) < 1e-6

    md = report.report(run_dir, html_path=str(tmp_path / "report.html"))
    assert "## Workers held (the SPA model, M = C / W)" in md
    assert "| 4242 | joiner |" in md and "| 3.50 |" in md
    page = (tmp_path / "report.html").read_text()
    assert "w(t): slots held" in page and "<td>4242</td><td>joiner</td>" in page
