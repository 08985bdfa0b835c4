"""A master paused (SIGSTOP, Ctrl-Z, a frozen machine) past its agents' heartbeat catches up.

The probe's repros (issue 43): ``taskflow run -w 2`` SIGSTOPped for 20 s and for 60 s, with
and without running tasks, against agents that take a master silent for 15 s for lost. Here
the master is a real process (a script with a Runtime) whose local agent takes it for lost
after 6 s (``heartbeat_timeout=3``: at least three PINGs' time), and each pause lasts until
the agent has *done* what the probe's 20 s or 60 s made it do, waited for as an event:

- no task running: the agent exits (nothing to keep); the master starts a fresh one;
- tasks running, short (20 s of 15): the agent keeps them and waits on its socket; the
  master reaches it again and the tasks go on there (``2 running tasks kept``);
- tasks running, long (60 s of 15): the tasks end while the master is stopped; their
  results are held and used (``2 held results used``);
- past the agents' grace: the agent stopped its tasks and exited; a fresh agent runs them.

Each task appends ``start I`` / ``end I`` to a marks file and ends when the test says so
(the file ``release``), so the marks prove that no task ended twice. Every run must end
``finished``, say the pause once, leave no agent and no adoption socket.
"""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from support.agents import agents_gone
from support.paths import TESTS
from support.waiting import until
from taskflow.wire import adoption

MASTER = textwrap.dedent('''
    import os, sys, time
    import taskflow
    from taskflow import task, wait_on
    from taskflow.providers.local import LocalProvider

    HERE = os.path.dirname(os.path.abspath(__file__))

    def mark(what):
        with open(os.path.join(HERE, "marks"), "a") as f:
            f.write(what + "\\n")

    @task(returns=int)
    def held(i):
        mark(f"start {i}")
        while not os.path.exists(os.path.join(HERE, "release")):
            time.sleep(0.05)
        mark(f"end {i}")
        return i * 10

    grace = float(os.environ.get("GRACE", "600"))
    with taskflow.Runtime(providers=[LocalProvider(2, heartbeat_timeout=3)],
                          adopt_grace=grace) as rt:
        print("RUN", rt.run_id, rt.nodes[0].info["pid"], flush=True)
        if sys.argv[1] == "idle":
            open(os.path.join(HERE, "release"), "w").close()
            print("first", wait_on(held(0)), flush=True)
            mark("idle")
            while not os.path.exists(os.path.join(HERE, "go")):
                time.sleep(0.05)
            print("second", wait_on(held(1)), flush=True)
        else:
            print("SUM", sum(wait_on([held(i) for i in range(2)])), flush=True)
    print("DONE", flush=True)
''')


def _marks(tmp_path):
    p = tmp_path / "marks"
    return p.read_text().split() if p.exists() else []


def _gone(pid: int) -> bool:
    """The agent exited (a zombie while its parent, the master, is stopped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


class Master:
    """The master process, its output in files (it is stopped: a pipe would fill)."""

    def __init__(self, tmp_path, mode: str, **env: str) -> None:
        self.tmp = tmp_path
        (tmp_path / "wf.py").write_text(MASTER)
        self.out, self.err = tmp_path / "out", tmp_path / "err"
        self.p = subprocess.Popen(
            [sys.executable, "wf.py", mode], cwd=tmp_path,
            env=dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"), PYTHONPATH=TESTS,
                     **env),
            stdout=open(self.out, "w"), stderr=open(self.err, "w"))
        until(lambda: "RUN" in self.out.read_text(), 60, "the run's start")
        _, self.run_id, pid = self.out.read_text().split("\n")[0].split()
        self.agent = int(pid)
        self.socket = adoption.socket_path(self.run_id, "local")

    def stop(self) -> None:
        os.kill(self.p.pid, signal.SIGSTOP)

    def cont(self) -> None:
        os.kill(self.p.pid, signal.SIGCONT)

    def end(self) -> tuple[int, str, str]:
        try:
            code = self.p.wait(90)
        except subprocess.TimeoutExpired:
            self.p.kill()
            raise AssertionError(f"the master hung:\n{self.err.read_text()}") from None
        return code, self.out.read_text(), self.err.read_text()

    def journal(self) -> tuple[str, list[str]]:
        db = sqlite3.connect(self.tmp / "runs" / self.run_id / "journal.db")
        try:
            state = db.execute("SELECT state FROM run").fetchone()[0]
            lines = [r[0] for r in db.execute(
                "SELECT line FROM logs WHERE level = 'TASKFLOW' ORDER BY t")]
        finally:
            db.close()
        return state, lines

    def check_end(self, out: str, err: str) -> None:
        """What every pause must leave: a finished run that says its pause once, no
        agent, no socket."""
        state, lines = self.journal()
        assert state == "finished", err
        paused = [line for line in lines if line.startswith("the master was paused for")]
        assert len(paused) == 1, lines
        assert err.count("the master was paused for") == 1, err
        assert "DONE" in out, err
        agents_gone(self.tmp, 20)
        assert not os.path.exists(self.socket)


@pytest.mark.timeout(180)
def test_a_paused_master_with_no_task_running_starts_a_fresh_agent(tmp_path):
    m = Master(tmp_path, "idle")
    until(lambda: "idle" in _marks(tmp_path), 60, "the first task's end")
    m.stop()
    until(lambda: _gone(m.agent), 60, "the agent to take its master for lost and exit")
    m.cont()
    (tmp_path / "go").touch()
    code, out, err = m.end()
    assert code == 0, err
    assert "second 10" in out
    assert "node local back after" in err and "with a fresh agent" in err
    m.check_end(out, err)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("length", ["short", "long"])
def test_a_paused_master_reaches_its_agent_again_and_its_tasks_finish_once(tmp_path, length):
    """short: the tasks still run when the master runs again (kept there); long: they ended
    while it was stopped (their held results are used)."""
    m = Master(tmp_path, "busy")
    until(lambda: _marks(tmp_path).count("start") == 2, 60, "both tasks' start")
    m.stop()
    until(lambda: os.path.exists(m.socket), 60, "the agent to wait for its master")
    if length == "long":
        (tmp_path / "release").touch()
        until(lambda: _marks(tmp_path).count("end") == 2, 60, "both tasks' end")
    m.cont()
    if length == "short":
        until(lambda: "node local back after" in m.err.read_text(), 60, "the comeback")
        (tmp_path / "release").touch()
    code, out, err = m.end()
    assert code == 0, err
    assert "SUM 10" in out
    marks = _marks(tmp_path)
    assert marks.count("start") == 2 and marks.count("end") == 2, marks     # each once
    assert ("2 running tasks kept" if length == "short" else "2 held results used") in err
    m.check_end(out, err)


@pytest.mark.timeout(180)
def test_a_master_paused_past_the_agents_grace_runs_the_stopped_tasks_again(tmp_path):
    """The agent waited its grace (1 s here, 600 s by default) for the master, stopped its
    tasks and exited: a fresh agent runs them again, each ends once."""
    m = Master(tmp_path, "busy", GRACE="1")
    until(lambda: _marks(tmp_path).count("start") == 2, 60, "both tasks' start")
    m.stop()
    until(lambda: _gone(m.agent), 60, "the agent to give up its master and exit")
    (tmp_path / "release").touch()
    m.cont()
    code, out, err = m.end()
    assert code == 0, err
    assert "SUM 10" in out
    marks = _marks(tmp_path)
    assert marks.count("end") == 2, marks          # stopped once, ended once
    assert "with a fresh agent" in err
    m.check_end(out, err)
