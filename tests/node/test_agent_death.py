"""Executors end with their agent, whatever kills it: a task whose agent was SIGKILLed is
never finished by the orphaned executor after the master ran it again or failed the run,
and nothing of the run (executor, the program it runs) outlives it.

Each run is a real `taskflow run` process with real local node agents. The tasks append to
``marks`` beside the script (``start I pid ppid`` / ``end I``), so the marks prove how often
each task ended, and name the processes to wait for; they end once the test creates ``gate``
(after the agent it killed has ended), so nothing depends on how long they run.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

from support.paths import TESTS
from support.waiting import until

WF = textwrap.dedent('''
    import os, sys, time
    from taskflow import task, wait_on

    HERE = os.path.dirname(os.path.abspath(__file__))
    MARKS = os.path.join(HERE, "marks")

    def mark(what):
        with open(MARKS, "a") as f:
            f.write(what + "\\n")

    @task(returns=int)
    def gated(i):
        mark(f"start {i} {os.getpid()} {os.getppid()}")
        while not os.path.exists(os.path.join(HERE, "gate")):     # the test opens it
            time.sleep(0.05)
        mark(f"end {i}")
        return i * 10

    futs = [gated(i) for i in range(4)]
    print("SUM", sum(wait_on(futs)), flush=True)
''')

# A program that kills its agent (the parent of its executor, $PPID), then sleeps and
# writes a file: the executor and the program must die with the agent, so the file never
# appears.
KILLER = textwrap.dedent('''
    import os
    from taskflow import binary, task, wait_on

    HERE = os.path.dirname(os.path.abspath(__file__))
    SCRIPT = ("echo $$ $PPID > " + HERE + "/program; "
              "kill -9 $(cut -d' ' -f4 /proc/$PPID/stat); sleep 60; touch " + HERE + "/written")

    @binary(binary="sh", args="-c {{script}}")
    @task()
    def kill_my_agent(script):
        pass

    wait_on(kill_my_agent(SCRIPT))
''')


def _env(tmp_path, **kw):
    return dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"), PYTHONPATH=TESTS, **kw)


def _marks(tmp_path) -> list[str]:
    p = tmp_path / "marks"
    return p.read_text().split("\n")[:-1] if p.exists() else []


def _alive(pid: int) -> bool:
    """``pid`` is a process (not a zombie: a zombie has ended)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()[0] != b"Z"
    except OSError:
        return False


def _all_gone(pids: set[int], timeout: float = 30.0) -> None:
    until(lambda: not any(_alive(p) for p in pids), timeout,
          what=f"the processes {sorted(p for p in pids if _alive(p))} to end")


def test_a_killed_agents_tasks_end_once_and_its_executors_with_it(tmp_path):
    """2 local nodes, 2 tasks on each; one agent is SIGKILLed while its 2 run: they run
    again on the other node and each ends once; no process of the run is left after it."""
    (tmp_path / "wf.py").write_text(WF)
    p = subprocess.Popen([sys.executable, "-m", "taskflow", "run", "--no-progress",
                          "--workers", "4", "--local-nodes", "2", "--adopt-grace", "0",
                          "wf.py"], cwd=tmp_path, env=_env(tmp_path),
                         stdout=open(tmp_path / "out", "w"), stderr=open(tmp_path / "err", "w"))
    try:
        until(lambda: len([m for m in _marks(tmp_path) if m.startswith("start")]) == 4, 60,
              what="4 tasks to start")
        starts = [m.split() for m in _marks(tmp_path) if m.startswith("start")]
        agents = sorted({int(s[3]) for s in starts})
        assert len(agents) == 2, starts          # 2 tasks on each node
        victim = agents[0]
        os.kill(victim, signal.SIGKILL)
        # once the agent has ended (a zombie until its master reaps it) its executors have
        # their death signal; the gate opens: an executor left running would end its task
        until(lambda: not _alive(victim), 30, what="the killed agent to end")
        (tmp_path / "gate").touch()
        assert p.wait(120) == 0, (tmp_path / "err").read_text()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert "SUM 60" in (tmp_path / "out").read_text()
    ends = sorted(m for m in _marks(tmp_path) if m.startswith("end"))
    assert ends == [f"end {i}" for i in range(4)], _marks(tmp_path)     # each ended once
    starts = [m.split() for m in _marks(tmp_path) if m.startswith("start")]
    _all_gone({int(s[2]) for s in starts} | {int(s[3]) for s in starts})
    # (their processes are gone for good: no late "end" can come)
    assert sorted(m for m in _marks(tmp_path) if m.startswith("end")) == ends


def test_a_task_that_kills_its_agent_leaves_no_executor_nor_program(tmp_path):
    """1 node: the run fails at once, naming the lost node; the executor and the program it
    started die with the agent (the program's file is never written)."""
    (tmp_path / "wf.py").write_text(KILLER)
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "--no-progress",
                        "--adopt-grace", "0", "wf.py"], cwd=tmp_path, env=_env(tmp_path),
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    assert "local" in r.stderr and "lost" in r.stderr, r.stderr
    program, executor = map(int, (tmp_path / "program").read_text().split())
    _all_gone({program, executor})
    assert not (tmp_path / "written").exists()
