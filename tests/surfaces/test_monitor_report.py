"""The monitor's report call: one pass per journal state, and memory that does not grow.

The monitor of ``taskflow run --monitor`` runs in the master, whose cyclic
collector is off while the run lasts (runtime.gctune): the server here runs
in a process of its own set up the same way, and its resident memory is
read from /proc between calls.
"""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import urllib.request

import pytest

import taskflow
from taskflow.journal import Journal
from taskflow.monitor.reportcache import ReportCache, json_bytes

from support import observe_tasks as ot

TASKS = 5000
CALLS = 16
GROWTH_MB = 12     # RSS growth allowed over CALLS - 1 calls (a pass over the run's task rows
#                    held as a graph cost ~6 MB per call here, kept by the master's collector)

SERVER = r"""
import sys
from taskflow.monitor.server import Monitor
from taskflow.runtime import gctune
gctune.tune()                       # as in the master while its run lasts
mon = Monitor(sys.argv[1]).start()
print(mon.port, mon.token, flush=True)
sys.stdin.read()                    # until the test closes it
mon.stop()
"""


@pytest.fixture(scope="module")
def big_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    old = os.getcwd()
    os.chdir(tmp)
    try:
        with taskflow.Runtime(workers=2, run_dir=str(tmp / "runs"), echo_logs=False) as rt:
            firsts = [ot.add(i, 1) for i in range(TASKS - TASKS // 10)]
            taskflow.wait_on([ot.add(firsts[i], firsts[i + 1])
                              for i in range(0, 2 * (TASKS // 10), 2)])
    finally:
        os.chdir(old)
    return rt


def _rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_report_calls_give_one_answer_and_memory_stays_flat(big_run):
    proc = subprocess.Popen([sys.executable, "-c", SERVER, os.path.dirname(big_run.run_dir)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        port, token = proc.stdout.readline().split()
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/api/runs/{big_run.run_id}/report",
            headers={"Authorization": f"Bearer {token}"})
        bodies = []
        for i in range(CALLS):
            with urllib.request.urlopen(req, timeout=120) as r:
                bodies.append(r.read())
            if i == 0:
                after_first = _rss_mb(proc.pid)      # (the report's modules are imported)
        grown = _rss_mb(proc.pid) - after_first
    finally:
        proc.stdin.close()
        proc.wait(30)
    f = json.loads(bodies[0])
    assert f["tasks"] == TASKS and f["ran"] == TASKS and f["counts"]["DONE"] == TASKS
    # every pair's add has its two edges in the journal (also to an add that had ended
    # before the pair was called: future.producer_id) ...
    with sqlite3.connect(os.path.join(big_run.run_dir, "journal.db")) as db:
        deps = db.execute("SELECT COUNT(*), COUNT(DISTINCT task_id) FROM deps").fetchone()
    assert deps == (2 * (TASKS // 10), TASKS // 10)
    # ... and the critical path is the longest chain by run time: a pair after its two
    # adds, or one unpaired add that happened to run longer than any pair (a loaded machine)
    assert len(f["critical_path"]) in (1, 2)
    assert all(b == bodies[0] for b in bodies)      # the same answer, byte for byte
    assert grown < GROWTH_MB, f"the monitor grew {grown:.1f} MB over {CALLS - 1} report calls"


def test_a_commit_makes_a_new_answer_and_no_commit_none(big_run):
    cache = ReportCache(json_bytes(json.dumps))
    try:
        first = cache.get(big_run.run_dir)
        assert cache.get(big_run.run_dir) == first and cache.passes == 1
        with sqlite3.connect(os.path.join(big_run.run_dir, "journal.db")) as db:   # a writer
            db.execute("UPDATE task_rows SET t_end = t_end + 100 WHERE id = 1")
        second = cache.get(big_run.run_dir)
        assert cache.passes == 2 and second != first
        assert json.loads(second)["longest"][0]["id"] == 1   # the state after the commit
        assert cache.get(big_run.run_dir) == second and cache.passes == 2
        with Journal(big_run.run_dir) as j:
            assert j.task(1)["t_end"] > j.task(2)["t_end"] + 99
    finally:
        cache.close()
