"""Resuming a run whose tasks called tasks: finished children are restored, a parent that
was running when its master was killed runs again (it is never adopted: the new master has
none of its calls), and only the children that had not finished run again.

`taskflow run` is a real process, SIGKILLed for real; its agents outlive it (adoption's
default). Each task appends a line to ``marks`` beside the script when it runs, so what
ran again is counted; the test waits on the resume log's records and on files, never on
time.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

from support.agents import agents_in
from support.waiting import until

WF = textwrap.dedent('''
    import os, time
    from taskflow import task, wait_on

    HERE = os.path.dirname(os.path.abspath(__file__))

    def mark(what):
        with open(os.path.join(HERE, "marks"), "a") as f:
            f.write(what + "\\n")

    def gate(name):
        while not os.path.exists(os.path.join(HERE, name)):
            time.sleep(0.02)

    @task(returns=1)
    def child(i):
        mark(f"start {i}")
        if i >= 3:
            gate("gate")            # children 3 and 4 end once the test opens the gate
        mark(f"end {i}")
        return i * i

    @task(returns=1)
    def parent(n):
        mark("parent")
        kids = [child(i) for i in range(n)]
        gate("go")                  # running (not waiting) when the master is killed
        return sum(wait_on(kids))

    print("SUM", wait_on(parent(5)), flush=True)
''')


def _env(tmp_path):
    return dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"))


def _marks(tmp_path):
    p = tmp_path / "marks"
    return p.read_text().split("\n")[:-1] if p.exists() else []


def _recorded(run_dir):
    from taskflow.runtime.recovery.restore import ResumeStore
    try:
        return sorted(r.name for r in ResumeStore(str(run_dir)).by_key.values())
    except FileNotFoundError:
        return []


def _start(tmp_path, workers):
    """``taskflow run wf.py`` in the background (adoptable); the process and its run's
    directory once made."""
    with open(tmp_path / "out1", "w") as out, open(tmp_path / "err1", "w") as err:
        p = subprocess.Popen([sys.executable, "-m", "taskflow", "run", "--no-progress",
                              "--workers", str(workers), "--adopt-grace", "60", "wf.py"],
                             cwd=tmp_path, env=_env(tmp_path), stdout=out, stderr=err)
    until(lambda: os.path.isdir(tmp_path / "runs") and os.listdir(tmp_path / "runs"), 60,
          "the run's directory")
    (first,) = os.listdir(tmp_path / "runs")
    return p, tmp_path / "runs" / first


def _resume(tmp_path, workers):
    return subprocess.run([sys.executable, "-m", "taskflow", "run", "--no-progress",
                           "--resume", "--workers", str(workers), "--adopt-grace", "60",
                           "wf.py"], cwd=tmp_path, env=_env(tmp_path), capture_output=True,
                          text=True, timeout=90)


def test_finished_children_are_restored_and_a_running_parent_runs_again(tmp_path):
    (tmp_path / "wf.py").write_text(WF)
    p, first = _start(tmp_path, 6)
    # children 0-2 finished and recorded; 3 and 4 started (nothing starts after the kill:
    # the marks of the resumed run are its own)
    until(lambda: _recorded(first) == ["child"] * 3 and
          sum(m.startswith("start") for m in _marks(tmp_path)) == 5, 60,
          "three children recorded in the resume log, all five started")
    os.kill(p.pid, signal.SIGKILL)
    p.wait(10)
    before = _marks(tmp_path)
    assert sorted(m for m in before if m.startswith("end")) == ["end 0", "end 1", "end 2"]
    # (the agent keeps 3 and 4 running for a resumed master: they may end once the gate
    # opens below, and are cancelled there, as the parent is)
    assert agents_in(tmp_path), "its agent kept its tasks for a resumed master"
    (tmp_path / "marks").unlink()
    (tmp_path / "gate").touch()
    (tmp_path / "go").touch()
    r = _resume(tmp_path, 6)
    assert r.returncode == 0, r.stderr
    assert "SUM 30" in r.stdout                     # 0 + 1 + 4 + 9 + 16, as a whole run gives
    assert "3 task(s) restored" in r.stderr, r.stderr
    assert "running task(s) adopted" not in r.stderr, r.stderr
    again = _marks(tmp_path)
    # the parent ran again; of its children only the two that had not finished
    assert again.count("parent") == 1
    assert sorted(m for m in again if m.startswith("start")) == ["start 3", "start 4"], again
    until(lambda: not agents_in(tmp_path), 30, "no agent left")


LEFT = textwrap.dedent('''
    import os, time
    from taskflow import task, wait_on, FILE_OUT

    HERE = os.path.dirname(os.path.abspath(__file__))

    def mark(what):
        with open(os.path.join(HERE, "marks"), "a") as f:
            f.write(what + "\\n")

    @task(out=FILE_OUT)
    def child(out):
        mark("child")
        while not os.path.exists(os.path.join(HERE, "gate")):
            time.sleep(0.02)
        with open(out, "w") as f:
            f.write("written")

    @task(returns=1)
    def parent():
        mark("parent")
        child(os.path.join(HERE, "result.txt"))       # left running: not waited for
        return 1

    @task(returns=1)
    def other(x):
        return x + 1

    print("P", wait_on(parent()), flush=True)
    print("Q", wait_on(other(1)), flush=True)
''')


def test_a_parent_that_left_a_child_running_is_not_restored_without_it(tmp_path):
    """The parent ended well while its child still ran, and the master was killed before
    the child ended: the parent has no record in the resume log (restored whole, it would
    not call its child again, and the child's file would never be written), so the resumed
    run runs it again and the child with it."""
    (tmp_path / "wf.py").write_text(LEFT)
    p, first = _start(tmp_path, 2)
    # (other's record comes after the parent's would: the bus keeps them in their order)
    until(lambda: "other" in _recorded(first) and
          "child" in _marks(tmp_path), 60, "other recorded, the child running")
    os.kill(p.pid, signal.SIGKILL)
    p.wait(10)
    assert _recorded(first) == ["other"]
    (tmp_path / "marks").unlink()
    (tmp_path / "gate").touch()
    r = _resume(tmp_path, 2)
    assert r.returncode == 0, r.stderr
    assert "P 1" in r.stdout and "Q 2" in r.stdout
    assert (tmp_path / "result.txt").read_text() == "written"
    assert "parent" in _marks(tmp_path)               # it ran again, and called its child
    until(lambda: not agents_in(tmp_path), 30, "no agent left")
