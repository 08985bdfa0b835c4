"""The trace as a table: exact peak memory, rows written as attempts end, bad runs said.

Peaks are compared with ``/usr/bin/time -v`` on the same program (its maximum
resident set size); a 256 MiB allocation keeps the test quick (the report's
1 GiB figures were measured by hand the same way).
"""
from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

import taskflow
from taskflow.cli import main
from taskflow.journal import Journal
from taskflow.observe.attempts.fields import FIELDS
from taskflow.observe.attempts.rows import trace_rows

from support import peak_tasks as pt
from support.waiting import until

MIB = 256


def _time_v(args: list[str]) -> int:
    """``/usr/bin/time -v``'s maximum resident set size of ``args``, in bytes."""
    r = subprocess.run(["/usr/bin/time", "-v", *args], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    kb = re.search(r"Maximum resident set size \(kbytes\): (\d+)", r.stderr)
    assert kb, r.stderr
    return int(kb.group(1)) * 1024


@pytest.mark.skipif(not os.path.exists("/usr/bin/time"),
                    reason="GNU time is not installed (apt-get install time)")
def test_peak_rss_is_the_kernels_figure(tmp_path, monkeypatch):
    """A program, a Python task and a Python task whose child holds the peak: each within
    5 % of /usr/bin/time's figure for the same allocation, a smaller child after a larger
    one too; a child that C code reaped (os.system) and that peaked under an earlier
    task's child is said to be a lower bound, not given that child's peak."""
    monkeypatch.chdir(tmp_path)
    code = pt.alloc_code(MIB)
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs"), echo_logs=False) as rt:
        # one executor, in this order: its children's peak starts from nothing here
        taskflow.wait_on(pt.child_alloc(MIB))
        taskflow.wait_on(pt.program(code))
        taskflow.wait_on(pt.python_alloc(MIB))
        taskflow.wait_on(pt.child_alloc(MIB // 2))      # under the first child's peak
        taskflow.wait_on(pt.system_alloc(MIB // 4))
        run_dir = rt.run_dir
    with Journal(run_dir) as j:
        rows = list(trace_rows(j))
    child, program, python, smaller_child, system_child = rows
    ref = _time_v([sys.executable, "-c", code])
    ref_half = _time_v([sys.executable, "-c", pt.alloc_code(MIB // 2)])
    # the executor's interpreter has taskflow's modules loaded: so does the reference
    ref_python = _time_v([sys.executable, "-c", "import taskflow.agent.executor.loop\n" + code])
    assert (child["name"], child["peak_rss_measure"]) == ("child_alloc", "children")
    assert (program["name"], program["peak_rss_measure"]) == ("program", "wait4")
    assert (python["name"], python["peak_rss_measure"]) == ("python_alloc", "vmhwm")
    assert smaller_child["peak_rss_measure"] == "children"
    for row, want in ((child, ref), (program, ref), (python, ref_python),
                      (smaller_child, ref_half)):
        assert row["peak_rss"] == pytest.approx(want, rel=0.05), (row, want)
    assert system_child["peak_rss_measure"] == "at-least"
    assert system_child["peak_rss"] < MIB * 2**20 // 2      # not the earlier child's peak


WF = textwrap.dedent('''
    import os, sys, time
    from taskflow import task, wait_on

    @task(returns=int)
    def first(x):
        return x

    @task(returns=int)
    def flaky(marker):
        if not os.path.exists(marker):          # the first attempt fails, the second not
            open(marker, "w").close()
            raise ValueError("the first attempt fails")
        return 7

    @task(returns=int)
    def outer():
        return wait_on(first(40)) + 2

    wait_on([first(1), flaky("tried")])
    deadline = time.time() + 120                 # the test says go once it saw those rows
    while not os.path.exists("go") and time.time() < deadline:
        time.sleep(0.02)
    print("RESULT", wait_on(outer()))
''')


def _rows(path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    return list(csv.DictReader(io.StringIO(path.read_text()), delimiter="\t"))


def test_trace_file_rows_come_as_attempts_end_and_the_journal_says_the_same(tmp_path):
    (tmp_path / "wf.py").write_text(WF)
    trace = tmp_path / "trace.tsv"
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"))
    proc = subprocess.Popen([sys.executable, "-m", "taskflow", "run", "--no-progress",
                             "--retries", "1", "--trace-file", str(trace), "wf.py"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        # the rows of the ended attempts are there while the run still goes (it waits)
        until(lambda: len(_rows(trace)) >= 3, timeout=90, what="three rows in the trace file")
        assert proc.poll() is None
        early = _rows(trace)
        assert list(early[0]) == list(FIELDS)
        by = {(r["name"], r["status"]) for r in early}
        assert by == {("first", "DONE"), ("flaky", "RETRIED"), ("flaky", "DONE")}
        retried = next(r for r in early if r["status"] == "RETRIED")
        assert retried["attempt"] == "1" and "the first attempt fails" in retried["error"]
        (tmp_path / "go").write_text("")
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0 and "RESULT 42" in out, err
    rows = _rows(trace)
    outer = next(r for r in rows if r["name"] == "outer")
    nested = [r for r in rows if r["parent"] == outer["task_id"]]
    assert [r["name"] for r in nested] == ["first"]           # called by outer while it ran
    for r in rows:
        assert r["node"] == "local" and float(r["complete"]) >= float(r["submit"])
    # afterwards, from the journal: the same attempts (as JSON, and CSV with chosen fields)
    runner = CliRunner()
    got = runner.invoke(main, ["trace", "--run-dir", str(tmp_path / "runs"), "--format",
                               "json"])
    assert got.exit_code == 0, got.output
    table = json.loads(got.output)
    assert sorted((r["task_id"], r["status"]) for r in table) == \
        sorted((int(r["task_id"]), r["status"]) for r in rows)
    assert {r["parent"] for r in table if r["task_id"] == int(nested[0]["task_id"])} == \
        {int(outer["task_id"])}
    # the attempt that ran again: its figures kept too (ATTEMPT transitions)
    tried = next(r for r in table if r["status"] == "RETRIED")
    live = next(r for r in rows if r["status"] == "RETRIED")
    assert tried["attempt"] == 1 and tried["start"] and tried["peak_rss"] > 0
    assert float(live["start"]) == pytest.approx(tried["start"], abs=1e-3)
    assert float(live["complete"]) == pytest.approx(tried["complete"], abs=1e-3)
    got = runner.invoke(main, ["trace", "--run-dir", str(tmp_path / "runs"), "--format", "csv",
                               "--fields", "task_id,name,status,attempt"])
    assert got.exit_code == 0, got.output
    assert got.output.splitlines()[0] == "task_id,name,status,attempt"
    assert "flaky,RETRIED,1" in got.output and "flaky,DONE,2" in got.output
    got = runner.invoke(main, ["trace", "--run-dir", str(tmp_path / "runs"), "--format", "tsv",
                               "--fields", "name,peak"])
    assert got.exit_code == 2 and "no trace field 'peak'" in got.output


def test_a_run_gone_or_damaged_is_said_not_a_traceback(tmp_path):
    runs = tmp_path / "runs"
    with taskflow.Runtime(workers=1, run_dir=str(runs), echo_logs=False) as rt:
        taskflow.wait_on(pt.python_alloc(1))
        run_dir = rt.run_dir
    runner = CliRunner()
    root = ["--run-dir", str(runs)]
    run_id = os.path.basename(run_dir)
    # damaged: its journal overwritten with bytes that are no database
    journal = os.path.join(run_dir, "journal.db")
    with open(journal, "r+b") as f:
        f.write(b"this is no SQLite file" * 300)
    for cmd in (["trace", run_id, "--format", "csv"], ["trace", run_id],
                ["explain", run_id]):
        r = runner.invoke(main, [*cmd, *root])
        assert r.exit_code == 1 and "Traceback" not in r.output, (cmd, r.output)
        assert f"{journal} is damaged (" in r.output, (cmd, r.output)
    # emptied: no tables at all
    with open(journal, "wb"):
        pass
    for cmd in (["trace", run_id, "--format", "tsv"], ["trace", run_id], ["explain", run_id]):
        r = runner.invoke(main, [*cmd, *root])
        assert r.exit_code == 1 and f"{journal} has no journal tables (0 bytes)" in r.output
    # gone: the run's directory removed (named by its id, or by its path)
    shutil.rmtree(run_dir)
    for cmd in (["trace", run_id, "--format", "tsv"], ["explain", run_id],
                ["trace", run_dir, "--format", "json"]):
        r = runner.invoke(main, [*cmd, *root])
        assert r.exit_code == 1 and "Traceback" not in r.output, (cmd, r.output)
        assert "no runs with a journal under" in r.output and str(runs) in r.output


FLOW = textwrap.dedent('''
    import os, time
    from taskflow import task, wait_on

    @task(returns=int)
    def step(x):
        return x

    deadline = time.time() + 120                 # the test says go once its reader left
    while not os.path.exists("go") and time.time() < deadline:
        time.sleep(0.02)
    print("RESULT", sum(wait_on([step(i) for i in range(20)])))
''')


def test_a_trace_file_that_cannot_be_written_ends_and_the_run_goes_on(tmp_path):
    """Its reader gone (a pipe), the trace file's writes fail: said once, the run ends
    well and its journal has every row."""
    (tmp_path / "wf.py").write_text(FLOW)
    fifo = tmp_path / "trace.tsv"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"))
    proc = subprocess.Popen([sys.executable, "-m", "taskflow", "run", "--no-progress",
                             "--trace-file", str(fifo), "wf.py"], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        got = bytearray()

        def header() -> bool:
            try:
                got.extend(os.read(reader, 4096))
            except BlockingIOError:
                pass
            return b"\n" in got
        until(header, timeout=90, what="the trace file's header")
        assert got.startswith(b"task_id\tname\t")
        os.close(reader)                    # nobody reads it any more
        (tmp_path / "go").write_text("")
        out, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0 and "RESULT 190" in out, err
    assert err.count(f"--trace-file {fifo}: Broken pipe; no more rows are written") == 1, err
    r = CliRunner().invoke(main, ["trace", "--run-dir", str(tmp_path / "runs"), "--format",
                                  "csv", "--fields", "name,status"])
    assert r.output.count("step,DONE") == 20
