"""CPU time and peak memory measured per task on the node (Python and program tasks)."""
from __future__ import annotations

import sys

import pytest

import taskflow
from taskflow import binary, task
from taskflow.journal import Journal
from taskflow.observe.report import figures, to_markdown

from support import observe_tasks as ot

MiB = 2**20


@binary(binary=sys.executable)
@task()
def hog(flag, code):
    """A program: a Python child that holds 150 MiB and computes for a while."""


HOG = ("b = bytearray(150 * 2**20)\nfor i in range(0, len(b), 4096): b[i] = 1\n"
       "import time\nt = time.process_time() + 0.3\nwhile time.process_time() < t: pass\n"
       "open('/dev/null', 'wb').write(bytes(6 * 2**20))\n")


def test_cpu_and_peak_memory_are_measured_on_the_node(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), echo_logs=False) as rt:
        busy = ot.burn(0.4, 120)
        idle = ot.nap(0.4)
        prog = hog("-c", HOG)
        taskflow.wait_on([busy, idle, prog])
        short = [ot.noop(i) for i in range(300)]
        taskflow.wait_on(short)
    with Journal(rt.run_dir) as j:
        usage = j.usage()
        f = figures(j)
        tasks = {t["id"]: t for t in j.tasks()}
    cpu, rss, _, _ = usage[1]              # the Python task that computes and holds memory
    assert 0.35 <= cpu <= 0.4 + 0.5 and rss >= 120 * MiB
    cpu, rss, _, wrote = usage[2]          # the one that sleeps
    assert cpu < 0.2 and rss < 120 * MiB   # the peak was reset for it: not burn's
    assert wrote < MiB                     # its one line of output, no more
    cpu, rss, _, wrote = usage[3]          # the program: its own process, not the executor
    assert cpu >= 0.25 and rss >= 150 * MiB
    assert wrote >= 6 * MiB                # what the program wrote, counted when it was reaped
    assert tasks[3]["name"] == "hog"
    # tasks of a function known to be short are not measured: no-ops pay nothing for it
    noops = [i for i, t in tasks.items() if t["name"] == "noop"]
    assert len(noops) == 300 and len([i for i in noops if i in usage]) <= 4   # first per executor
    # the report: per name and the top tasks
    assert f["usage"]["measured"] == len(usage)
    assert f["per_name"]["burn"]["rss_max"] >= 120 * MiB
    ran = tasks[1]["t_end"] - tasks[1]["t_start"]
    assert f["per_name"]["burn"]["cpu_pct"] == pytest.approx(100 * usage[1][0] / ran)
    assert f["usage"]["top_rss"][0]["name"] == "hog"
    md = to_markdown(f)
    assert "## CPU time and memory, measured on the nodes" in md
    assert "| burn | 1 |" in md and "### Most memory" in md
