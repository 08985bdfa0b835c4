"""SIGTERM and SIGINT stop the run even when the application catches what they raise.

The probe's repro (issue 43): three 20 s tasks, each ``wait_on`` in ``try/except
BaseException`` (a unittest runner, a bare ``except:`` around work), SIGTERMed twice, ended
``finished`` with exit status 0 and no trace of either signal. The signal itself must stop
the run (cli/signals.py) and the journal must say so; a script that waits again after
catching it must not hang (for the tasks that never started either). The tasks here run
until they are stopped, so the run cannot finish on its own.
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
from support.waiting import until

CATCHES_ALL = textwrap.dedent('''
    import os, time
    from taskflow import task, wait_on

    @task(returns=int)
    def work(i):
        with open("started", "a") as f:
            f.write(f"{i}\\n")
        time.sleep(600)
        return i

    futs = [work(i) for i in range(6)]     # 3 run, 3 wait for a slot
    got = []
    for f in futs:
        try:
            got.append(wait_on(f))
        except BaseException as exc:            # the application records it and goes on
            print("caught", type(exc).__name__, flush=True)
    print("GOT", got, flush=True)
''')

# tasks that ignore the interruption, and a script that never gives up on its value
STUBBORN = textwrap.dedent('''
    import time
    from taskflow import task, wait_on

    @task(returns=int)
    def work(i):
        with open("started", "a") as f:
            f.write(f"{i}\\n")
        end = time.time() + 600
        while time.time() < end:
            try:
                time.sleep(0.1)
            except BaseException:
                pass
        return i

    futs = [work(i) for i in range(3)]
    while True:
        try:
            print("GOT", wait_on(futs[0]), flush=True)
            break
        except BaseException as exc:
            print("caught", type(exc).__name__, flush=True)
            time.sleep(0.2)
''')


def _start(tmp_path, script: str, *args: str) -> subprocess.Popen:
    (tmp_path / "wf.py").write_text(script)
    return subprocess.Popen(
        [sys.executable, "-m", "taskflow", "run", "--no-progress", "-w", "3", *args, "wf.py"],
        cwd=tmp_path, env=dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs")),
        stdout=open(tmp_path / "out", "w"), stderr=open(tmp_path / "err", "w"))


def _started(tmp_path) -> int:
    p = tmp_path / "started"
    return len(p.read_text().split()) if p.exists() else 0


def _journal(tmp_path) -> tuple[str, str, list[str]]:
    (run,) = os.listdir(tmp_path / "runs")
    db = sqlite3.connect(tmp_path / "runs" / run / "journal.db")
    try:
        state, reason = db.execute("SELECT state, reason FROM run").fetchone()
        lines = [r[0] for r in db.execute(
            "SELECT line FROM logs WHERE level = 'TASKFLOW' AND node = 'master' ORDER BY t")]
    finally:
        db.close()
    return state, reason, lines


@pytest.mark.parametrize("sig,status", [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_the_application_catches_still_stops_the_run(tmp_path, sig, status):
    p = _start(tmp_path, CATCHES_ALL)
    until(lambda: _started(tmp_path) == 3, 60, "the tasks' start")
    p.send_signal(sig)
    code = p.wait(60)
    err = (tmp_path / "err").read_text()
    assert code == status, err
    out = (tmp_path / "out").read_text()
    assert out.count("caught") == 6 and "GOT []" in out, out    # it caught every one
    state, reason, lines = _journal(tmp_path)
    assert (state, reason) == ("interrupted", sig.name)
    assert lines == [f"{sig.name}: stopping the run: no new task starts; running tasks have "
                     f"10 s to end before they are killed (--grace); press Ctrl-C again, or "
                     f"send the signal again, to end at once"]
    agents_gone(tmp_path, 20)


def test_a_second_sigterm_ends_a_run_whose_application_caught_both(tmp_path):
    """The tasks ignore the interruption (the run would wait the 60 s grace) and the script
    swallows every exception: the second SIGTERM ends the run, and the process, at once."""
    p = _start(tmp_path, STUBBORN, "--grace", "60")
    until(lambda: _started(tmp_path) == 3, 60, "the tasks' start")
    p.send_signal(signal.SIGTERM)
    until(lambda: "stopping the run" in (tmp_path / "err").read_text(), 30, "the first stop")
    p.send_signal(signal.SIGTERM)
    code = p.wait(45)           # (far less than the grace: the kill does not wait for it)
    err = (tmp_path / "err").read_text()
    assert code == 143, err
    assert "second signal (SIGTERM): ending at once" in err
    assert "0 task(s) finished, 3 interrupted while running, 0 never started" in err
    assert "continue it with: taskflow run --resume" in err
    state, reason, lines = _journal(tmp_path)
    assert (state, reason) == ("interrupted", "SIGTERM")
    assert [line.split(":")[0] for line in lines] == ["SIGTERM", "second signal (SIGTERM)"]
    agents_gone(tmp_path, 20)
