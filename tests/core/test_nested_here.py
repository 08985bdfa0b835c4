"""Calls made in a task that run in its parent's executor (agent/executor/runhere.py): the
same tasks, rows, edges, errors, lines and resume as dispatched children.

A call runs there only if its function's mean duration on that executor is known and
short: the tests make every known one "short" (TASKFLOW_NESTED_HERE_SHORT=60, read where
the agent starts), and on one slot a parent's first, dispatched, call runs on its own
executor (while it waits): its next calls of that function may run there. A task that ran
there has no dispatch time in the journal.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest
from click.testing import CliRunner

import taskflow
from taskflow import wait_on
from taskflow.cli import main
from taskflow.journal import Journal

from support import here_tasks as H
from support import nested_tasks as N
from support.agents import agents_in
from support.waiting import until


def _run(tmp_path, monkeypatch, body, workers=1, short="60"):
    monkeypatch.chdir(tmp_path)
    if short is not None:
        monkeypatch.setenv("TASKFLOW_NESTED_HERE_SHORT", short)
    with taskflow.Runtime(workers=workers, run_dir=str(tmp_path / "runs")) as rt:
        out = body()
    with Journal(rt.run_dir) as j:
        tasks = {t["id"]: t for t in j.tasks()}
        edges = j.children()
    return rt, out, tasks, edges


def _ran_here(tasks):
    return [t for t in tasks.values() if t["t_dispatch"] is None]


def test_calls_run_here_have_their_rows_edges_and_node_and_the_switch_turns_it_off(
        tmp_path, monkeypatch):
    rt, value, tasks, edges = _run(tmp_path, monkeypatch, lambda: wait_on(N.fib(8)),
                                   workers=2)
    assert value == 21
    assert len(tasks) == 67 and all(t["state"] == "DONE" for t in tasks.values())
    assert len(edges) == 66                     # every call's parent edge, where it ran
    here = _ran_here(tasks)
    assert here and all(t["node"] == "local" and t["t_start"] and t["t_end"] >= t["t_start"]
                        for t in here)
    r = CliRunner().invoke(main, ["status", rt.run_id, "--run-dir", str(tmp_path / "runs")])
    assert r.exit_code == 0 and "nested: 66 task(s)" in r.output, r.output
    monkeypatch.setenv("TASKFLOW_NESTED_HERE", "0")
    (tmp_path / "off").mkdir()
    _, value, tasks, edges = _run(tmp_path / "off", monkeypatch, lambda: wait_on(N.fib(6)),
                                  workers=2)
    assert value == 8 and len(edges) == 24 and not _ran_here(tasks)


def test_a_call_that_failed_here_raises_at_the_parents_wait_naming_it(tmp_path,
                                                                     monkeypatch):
    _, text, tasks, _ = _run(tmp_path, monkeypatch,
                             lambda: wait_on(H.warm_then("maybe_fails", [1, 7])))
    (bad,) = [t for t in tasks.values() if t["params"] == "i=7"]
    assert bad["t_dispatch"] is None and bad["state"] == "FAILED"       # it ran here
    assert text.startswith("TaskError"), text
    assert f"task maybe_fails (id {bad['id']}) failed on node local" in text, text
    assert "ValueError: call 7 is broken" in text, text


def test_a_call_in_a_run_here_that_may_not_run_here_is_dispatched_under_it(tmp_path,
                                                                         monkeypatch):
    """with_an_option has a time_out: a call of it is dispatched, also from a call that
    runs here, which waits for it (its slot lent) and is its parent in the journal."""
    _, value, tasks, edges = _run(
        tmp_path, monkeypatch, lambda: wait_on(H.warm_then("calls_one_with_an_option",
                                                           [1, 2])))
    assert value == [1001, 1002]
    (outer,) = [t for t in tasks.values() if t["name"] == "calls_one_with_an_option"
                and t["params"] == "i=2"]
    (inner,) = [t for t in tasks.values() if t["name"] == "with_an_option"
                and t["params"] == "i=2"]
    assert outer["t_dispatch"] is None and inner["t_dispatch"] is not None
    assert (outer["id"], inner["id"]) in edges
    _, value, tasks, _ = _run(tmp_path, monkeypatch, lambda: wait_on(
        H.warm_then("barrier_after_an_option", [1, 2])))
    assert value == [1001, 1002]
    (outer,) = [t for t in tasks.values() if t["name"] == "barrier_after_an_option"
                and t["params"] == "i=2"]
    assert outer["t_dispatch"] is None


def test_a_large_value_made_here_is_right_and_its_function_runs_here_no_more(
        tmp_path, monkeypatch):
    _, value, tasks, _ = _run(tmp_path, monkeypatch,
                              lambda: wait_on(H.warm_then("big_twice", [1, 3])))
    assert value == [[3 * 2**20, b"\x01", 3 * 2**20, b"\x02"],
                     [3 * 2**20, b"\x03", 3 * 2**20, b"\x04"]]
    # big(1): not known yet; big(2) ran here and made a large value: big(3) and big(4),
    # called by big_twice(3), which ran here, were dispatched
    here = {(t["name"], t["params"]) for t in _ran_here(tasks)}
    assert here == {("big", "i=2"), ("big_twice", "i=3")}, here


def test_a_long_child_is_never_run_here(tmp_path, monkeypatch):
    """Its mean duration (0.2 s) is not short: a fan-out of it stays parallel."""
    _, value, tasks, _ = _run(tmp_path, monkeypatch,
                              lambda: wait_on(H.warm_then("slow", [0.2, 0.2, 0.2])),
                              workers=2, short=None)
    assert value == [0.2, 0.2, 0.2]
    assert not _ran_here(tasks)


def test_what_a_call_run_here_prints_is_its_own(tmp_path, monkeypatch):
    _, value, tasks, _ = _run(tmp_path, monkeypatch,
                              lambda: wait_on(H.warm_then("chatty", [1, 2])))
    assert value == [1, 2]
    (two,) = [t for t in tasks.values() if t["params"] == "i=2"]
    assert two["t_dispatch"] is None
    with Journal(str(tmp_path / "runs" / os.listdir(tmp_path / "runs")[0])) as j:
        lines = {(r["task_id"], r["line"]) for r in j.logs()}
    assert (two["id"], "line of chatty 2") in lines, lines
    assert sum(line == "line of chatty 2" for _, line in lines) == 1


WF = textwrap.dedent('''
    import os, time
    from taskflow import task, wait_on

    HERE = os.path.dirname(os.path.abspath(__file__))

    def mark(what):
        with open(os.path.join(HERE, "marks"), "a") as f:
            f.write(what + "\\n")

    @task(returns=1)
    def child(i):
        mark(f"start {i}")
        return i * i

    @task(returns=1)
    def parent(n):
        mark("parent")
        first = wait_on(child(0))       # dispatched (one slot: on this executor)
        rest = wait_on(*[child(i) for i in range(1, n)])    # the last one runs here
        while not os.path.exists(os.path.join(HERE, "go")):
            time.sleep(0.02)            # running (not waiting) when the master is killed
        return first + sum(rest)

    print("SUM", wait_on(parent(4)), flush=True)
''')


def test_a_resumed_run_restores_the_calls_that_ran_here(tmp_path):
    """The master is killed while the parent runs; the resumed run (which runs no call in
    its parent's executor) runs the parent again and restores its four children, the one
    that ran here too: none runs again."""
    from taskflow.runtime.recovery.restore import ResumeStore

    def recorded(run_dir):
        try:
            return sorted(r.name for r in ResumeStore(str(run_dir)).by_key.values())
        except FileNotFoundError:
            return []

    def marks():
        p = tmp_path / "marks"
        return p.read_text().split("\n")[:-1] if p.exists() else []

    (tmp_path / "wf.py").write_text(WF)
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"),
               TASKFLOW_NESTED_HERE_SHORT="60")
    with open(tmp_path / "out1", "w") as out, open(tmp_path / "err1", "w") as err:
        p = subprocess.Popen([sys.executable, "-m", "taskflow", "run", "--no-progress",
                              "--workers", "1", "--adopt-grace", "60", "wf.py"],
                             cwd=tmp_path, env=env, stdout=out, stderr=err)
    until(lambda: os.path.isdir(tmp_path / "runs") and os.listdir(tmp_path / "runs"), 60,
          "the run's directory")
    (first,) = os.listdir(tmp_path / "runs")
    until(lambda: recorded(tmp_path / "runs" / first) == ["child"] * 4, 60,
          "the four children recorded in the resume log")
    os.kill(p.pid, signal.SIGKILL)
    p.wait(10)
    assert sorted(marks()) == ["parent", "start 0", "start 1", "start 2", "start 3"]
    (tmp_path / "marks").unlink()
    (tmp_path / "go").touch()
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "--no-progress", "--resume",
                        "--workers", "1", "--adopt-grace", "60", "wf.py"], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=90)
    assert r.returncode == 0, r.stderr
    assert "SUM 14" in r.stdout                     # 0 + 1 + 4 + 9
    assert "4 task(s) restored" in r.stderr, r.stderr
    assert marks() == ["parent"], (marks(), r.stderr)                    # no child ran again
    until(lambda: not agents_in(tmp_path), 30, "no agent left")


@pytest.fixture(autouse=True)
def _no_switch(monkeypatch):
    monkeypatch.delenv("TASKFLOW_NESTED_HERE", raising=False)
