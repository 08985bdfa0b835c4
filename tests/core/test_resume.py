"""Never lose a run: --resume restores what an earlier run finished; interrupts stop cleanly.

Every test runs `taskflow run` as a real process (and kills or signals it for real).
Each task appends a line to ``runs.log`` when it runs, so what ran again is counted.
"""
from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from support.agents import agents_in as _agents_in
from support.waiting import until as _until

WF = textwrap.dedent('''
    import os, sys, time
    from taskflow import task, binary, wait_on, FILE_IN, FILE_OUT

    def mark(what):
        with open("runs.log", "a") as f:
            f.write(what + "\\n")

    @task(returns=int)
    def square(x):
        mark(f"square {x}")
        return x * x

    @task(returns=int)
    def total(values):
        mark("total")
        return sum(values)

    @task(out=FILE_OUT)
    def write(out, value):
        mark("write")
        with open(out, "w") as f:
            f.write(f"{value}\\n")

    @task(returns=int, src=FILE_IN)
    def count(src):
        mark("count")
        with open(src) as f:
            return len(f.read())

    @task(returns=int)
    def double(n):
        mark("double")
        return 2 * n

    @binary(binary="sh", args="-c {{cmd}}")
    @task(returns=int)
    def shell(cmd): ...

    s = total([square(i) for i in range(4)])
    write("result.txt", s)
    c = double(count("input.txt"))
    shell("echo prog >> runs.log")
    print("RESULT", wait_on(s), wait_on(c))
''')


def _run(tmp_path, *args, timeout=120, nap=None):
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"))
    if nap is not None:         # the SLOW workflow's program sleeps this long (else 60 s)
        env["NAP"] = nap
    return subprocess.run([sys.executable, "-m", "taskflow", "run", "--no-progress", *args],
                          cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=timeout)


def _ran(tmp_path):
    p = tmp_path / "runs.log"
    lines = p.read_text().split() if p.exists() else []
    p.unlink(missing_ok=True)
    return lines


@pytest.fixture
def wf(tmp_path):
    (tmp_path / "wf.py").write_text(WF)
    (tmp_path / "input.txt").write_text("hello\n")
    r = _run(tmp_path, "wf.py")                 # resumable without being asked
    assert r.returncode == 0, r.stderr
    assert "RESULT 14 12" in r.stdout
    assert sorted(_ran(tmp_path)) == sorted(["square"] * 4 + ["0", "1", "2", "3"] +
                                            ["total", "write", "count", "double", "prog"])
    return tmp_path


def test_an_output_is_kept_once_and_a_changed_one_is_made_again(wf):
    """A resumable run moves its outputs to your paths as any run does (no second copy in
    the run's directory); a resume takes them from there while they are as they were,
    and makes again one that was changed since."""
    (first,) = os.listdir(wf / "runs")
    data = wf / "runs" / first / "data"
    assert not [f for _, _, fs in os.walk(data) for f in fs if f == "result.txt"]
    r = _run(wf, "--resume", "--explain", "wf.py")
    assert r.returncode == 0 and _ran(wf) == [], r.stderr
    (wf / "result.txt").write_text("tampered\n")
    r = _run(wf, "--resume", "--explain", "wf.py")
    assert r.returncode == 0, r.stderr
    assert _ran(wf) == ["write"] and (wf / "result.txt").read_text() == "14\n"
    assert ("reused 0 of 1 calls of write; 1 ran: 1 the file it wrote was changed or removed "
            "since; 0 ran because its code changed") in r.stderr


def test_an_unchanged_script_restores_everything(wf):
    r = _run(wf, "--resume", "--explain", "wf.py")
    assert r.returncode == 0, r.stderr
    assert "RESULT 14 12" in r.stdout and (wf / "result.txt").read_text() == "14\n"
    assert _ran(wf) == []                                   # nothing ran: Python, file, program
    assert "9 task(s) restored, 0 ran again" in r.stderr


def test_an_edited_function_reruns_with_its_successors_only(wf):
    (wf / "wf.py").write_text(WF.replace("return sum(values)", "return sum(values) + 1"))
    r = _run(wf, "--resume", "--explain", "wf.py")
    assert r.returncode == 0, r.stderr
    assert "RESULT 15 12" in r.stdout and (wf / "result.txt").read_text() == "15\n"
    assert sorted(_ran(wf)) == ["total", "write"]
    # a line per task name by default (--explain adds each call)
    assert "reused 0 of 1 calls of total; 1 ran: 1 its code changed\n" in r.stderr
    assert ("reused 0 of 1 calls of write; 1 ran: 1 an upstream task changed (parameter "
            "value); 0 ran because its code changed") in r.stderr
    assert "reused 4 of 4 calls of square; none ran again" in r.stderr


def test_an_edited_input_file_reruns_its_readers_and_their_successors(wf):
    (wf / "input.txt").write_text("hello, again\n")
    r = _run(wf, "--resume", "--explain", "wf.py")
    assert r.returncode == 0, r.stderr
    assert "RESULT 14 26" in r.stdout
    assert sorted(_ran(wf)) == ["count", "double"]
    changed = f"input file changed (content, parameter src): {wf / 'input.txt'}"
    assert f"reused 0 of 1 calls of count; 1 ran: 1 {changed}; 0 ran because" in r.stderr
    assert ("reused 0 of 1 calls of double; 1 ran: 1 an upstream task changed (parameter n)"
            in r.stderr)
    # the same reasons, later, from the resumed run's journal
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(wf / "runs"))
    ex = subprocess.run([sys.executable, "-m", "taskflow", "explain"], cwd=wf, env=env,
                        capture_output=True, text=True, timeout=60)
    assert ex.returncode == 0, ex.stderr
    assert "7 call(s) reused from the earlier run (7 restored), 2 ran again" in ex.stdout
    assert f"  reused 0 of 1 calls of count; 1 ran: 1 {changed}; 0 ran" in ex.stdout
    assert "  reused 0 of 1 calls of double; 1 ran: 1 an upstream task changed" in ex.stdout
    assert re.search(r"^  task \d+ count\(src=.*\): " + re.escape(changed) + "$", ex.stdout, re.M)


def test_resume_names_a_run_and_refuses_one_that_was_not_resumable(wf):
    (first,) = os.listdir(wf / "runs")
    r = _run(wf, "--resume", first, "wf.py")
    assert r.returncode == 0 and _ran(wf) == []
    before = set(os.listdir(wf / "runs"))
    r = _run(wf, "--not-resumable", "wf.py")
    assert r.returncode == 0
    (plain,) = set(os.listdir(wf / "runs")) - before
    r = _run(wf, "--resume", plain, "wf.py")
    assert r.returncode == 2 and "was not resumable" in r.stderr


SLOW = textwrap.dedent('''
    import os, time
    from taskflow import task, binary, wait_on

    @task(returns=int)
    def step(i):
        with open("runs.log", "a") as f:
            f.write(f"step{i}\\n")
        time.sleep(0.25)
        return i

    @binary(binary="sleep")
    @task()
    def nap(s): ...

    out = [step(i) for i in range(24)]
    nap(int(os.environ.get("NAP", "60")))      # still running when the signal comes
    print("SUM", sum(wait_on(out)))
''')


def _start(tmp_path, *args):
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"))
    return subprocess.Popen([sys.executable, "-m", "taskflow", "run", "--no-progress", *args],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _journal(tmp_path):
    (run,) = [d for d in os.listdir(tmp_path / "runs")]
    db = sqlite3.connect(tmp_path / "runs" / run / "journal.db")
    try:
        state = db.execute("SELECT state FROM run").fetchone()[0]
        tasks = dict(db.execute("SELECT state, COUNT(*) FROM tasks GROUP BY state").fetchall())
    finally:
        db.close()
    return run, state, tasks


def _unstarted(tmp_path):
    """How many of the run's tasks have no start time."""
    (run,) = os.listdir(tmp_path / "runs")
    db = sqlite3.connect(tmp_path / "runs" / run / "journal.db")
    try:
        return db.execute("SELECT COUNT(*) FROM tasks WHERE t_start IS NULL").fetchone()[0]
    finally:
        db.close()


@pytest.mark.parametrize("sig,status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_the_run_cleanly_and_says_how_to_continue(tmp_path, sig, status):
    (tmp_path / "wf.py").write_text(SLOW)
    p = _start(tmp_path, "--resumable", "--grace", "3", "wf.py")
    _until(lambda: (tmp_path / "runs.log").exists() and
           len((tmp_path / "runs.log").read_text().split()) >= 4)
    p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    assert p.returncode == status, err
    run, state, tasks = _journal(tmp_path)
    assert state == "interrupted"
    assert set(tasks) <= {"DONE", "INTERRUPTED", "CANCELLED"} and tasks.get("INTERRUPTED", 0) >= 1
    # interrupted: what held the 2 slots; cancelled: what never started, queued behind
    # them on an executor or not sent at all (no start time)
    assert tasks["INTERRUPTED"] <= 2 and _unstarted(tmp_path) == tasks.get("CANCELLED", 0) > 0
    assert f"continue it with: taskflow run --resume {run} wf.py" in err
    assert "interrupted while running" in err and "never started" in err
    done_before = tasks.get("DONE", 0)
    ran_before = set(_ran(tmp_path))
    r = _run(tmp_path, "--resume", run, "wf.py", nap="1")     # the printed command
    assert r.returncode == 0, r.stderr
    assert "SUM 276" in r.stdout
    again = set(_ran(tmp_path))
    assert f"{done_before} task(s) restored" in r.stderr
    # steps that finished before the signal did not run again
    assert len(ran_before & again) <= tasks.get("INTERRUPTED", 0)


SLOW_PYCOMPSS = textwrap.dedent('''
    import os, time
    from pycompss.api.api import compss_wait_on
    from pycompss.api.binary import binary
    from pycompss.api.task import task

    @task(returns=int)
    def step(i):
        with open("runs.log", "a") as f:
            f.write(f"step{i}\\n")
        time.sleep(0.25)
        return i

    @binary(binary="sleep")
    @task()
    def nap(s):
        pass

    if __name__ == "__main__":
        out = [step(i) for i in range(24)]
        nap(int(os.environ.get("NAP", "60")))      # still running when the signal comes
        print("SUM", sum(compss_wait_on(out)))
''')


@pytest.mark.parametrize("sig,status", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_a_pycompss_run_as_it_stops_a_native_one(tmp_path, sig, status):
    """`taskflow run --compat pycompss` has the one run driver: the same clean stop, exit
    status and resume as the test above, with runcompss's closing lines."""
    (tmp_path / "app.py").write_text(SLOW_PYCOMPSS)
    p = _start(tmp_path, "--compat", "pycompss", "--resumable", "--grace", "3", "app.py")
    _until(lambda: (tmp_path / "runs.log").exists() and
           len((tmp_path / "runs.log").read_text().split()) >= 4)
    p.send_signal(sig)
    out, err = p.communicate(timeout=60)
    assert p.returncode == status, err
    assert out.rstrip().endswith("Error running application\n" + "-" * 60), out
    run, state, tasks = _journal(tmp_path)
    assert state == "interrupted"
    assert set(tasks) <= {"DONE", "INTERRUPTED", "CANCELLED"} and tasks.get("INTERRUPTED", 0) >= 1
    assert f"continue it with: taskflow run --compat pycompss --resume {run} app.py" in err
    assert "interrupted while running" in err and "never started" in err
    done_before = tasks.get("DONE", 0)
    ran_before = set(_ran(tmp_path))
    r = _run(tmp_path, "--compat", "pycompss", "--resume", run, "app.py", nap="1")
    assert r.returncode == 0, r.stderr
    assert "SUM 276" in r.stdout and r.stdout.rstrip().endswith("-" * 60)
    again = set(_ran(tmp_path))
    assert f"{done_before} task(s) restored" in r.stderr
    assert len(ran_before & again) <= tasks.get("INTERRUPTED", 0)


STUBBORN = textwrap.dedent('''
    from taskflow import task, binary, wait_on

    @binary(binary="sh", args="-c {{cmd}}")
    @task()
    def stubborn(cmd): ...

    stubborn("echo started > runs.log; trap '' TERM; sleep 30")
    stubborn("trap '' TERM; sleep 30")
''')


def test_a_second_signal_ends_the_run_at_once(tmp_path):
    (tmp_path / "wf.py").write_text(STUBBORN)          # programs that ignore SIGTERM
    p = _start(tmp_path, "--resumable", "--grace", "30", "wf.py")
    _until(lambda: (tmp_path / "runs.log").exists())
    p.send_signal(signal.SIGINT)
    time.sleep(1.0)
    t0 = time.time()
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 130 and time.time() - t0 < 15    # not the 30 s grace
    assert "ending at once" in err
    _, state, _ = _journal(tmp_path)
    assert state == "interrupted"


def test_a_master_killed_mid_run_is_resumed_without_redoing_finished_tasks(tmp_path):
    """A run started resumable, SIGKILLed mid-run: what it had recorded is never redone, the
    rest runs. (--adopt-grace 0: its agents exit with it and leave no process; agents that
    outlive their master: tests/cluster/test_adopt.py.)"""
    (tmp_path / "wf.py").write_text(SLOW.replace('nap(int(os.environ.get("NAP", "60")))', ""))
    p = _start(tmp_path, "--adopt-grace", "0", "wf.py")
    _until(lambda: (tmp_path / "runs.log").exists() and
           len((tmp_path / "runs.log").read_text().split()) >= 8)
    os.kill(p.pid, signal.SIGKILL)
    p.communicate(timeout=30)
    (run,) = os.listdir(tmp_path / "runs")
    from taskflow.runtime.recovery.restore import ResumeStore
    finished = {f"step{r.ordinal - 1}" for r in ResumeStore(str(tmp_path / "runs" / run))
                .by_key.values()}
    assert finished, "nothing was recorded before the kill"
    _until(lambda: not _agents_in(tmp_path), 20)        # no process left behind
    st = subprocess.run([sys.executable, "-m", "taskflow", "status", "--run-dir",
                         str(tmp_path / "runs")], cwd=tmp_path, capture_output=True, text=True)
    assert st.returncode == 1 and ": interrupted" in st.stdout
    ran_before = _ran(tmp_path)
    r = _run(tmp_path, "--resume", "wf.py")
    assert r.returncode == 0, r.stderr
    assert "SUM 276" in r.stdout                         # as an uninterrupted run gives
    again = _ran(tmp_path)
    assert not finished & set(again)                     # recorded: never redone
    assert set(ran_before) | set(again) == {f"step{i}" for i in range(24)}


CKPT = textwrap.dedent('''
    from taskflow import task, binary, wait_on

    @task(returns=int)
    def step(i):
        with open("runs.log", "a") as f:
            f.write(f"step{i}\\n")
        return i

    @binary(binary="sleep")
    @task()
    def nap(s): ...

    out = [step(i) for i in range(8)]
    total = sum(wait_on(out))
    # SNAPSHOT
    print("SUM", total, flush=True)
    nap(60)                                 # the master is killed while this runs
''')
SNAPSHOT = "from taskflow.compat.pycompss.api.api import compss_snapshot; compss_snapshot()"


@pytest.mark.parametrize("policy, kept, snapshot", [("tasks=1000,seconds=3600", 0, False),
                                                    ("seconds=0.2", 8, False),
                                                    ("tasks=1000,seconds=3600", 8, True)])
def test_a_checkpoint_policy_writes_records_in_batches(tmp_path, policy, kept, snapshot):
    """--checkpoint: records wait in memory until N tasks or T seconds (the loop writes
    them after T even when nothing else finishes), or until compss_snapshot(); a killed
    master loses what waited."""
    from taskflow.runtime.recovery.restore import ResumeStore
    (tmp_path / "wf.py").write_text(CKPT.replace("# SNAPSHOT", SNAPSHOT if snapshot else ""))
    p = _start(tmp_path, "--checkpoint", policy, "wf.py")      # implies --resumable
    assert p.stdout is not None
    assert p.stdout.readline().strip() == "SUM 28"             # every step acted on
    time.sleep(1.0)                                            # > T of the second policy
    os.kill(p.pid, signal.SIGKILL)
    p.communicate(timeout=30)
    (run,) = os.listdir(tmp_path / "runs")
    assert len(ResumeStore(str(tmp_path / "runs" / run)).by_key) == kept
    assert len(_ran(tmp_path)) == 8
    (tmp_path / "wf.py").write_text(CKPT.replace("nap(60)", "nap(0)"))
    r = _run(tmp_path, "--resume", "wf.py")
    assert r.returncode == 0, r.stderr
    assert "SUM 28" in r.stdout
    assert len(_ran(tmp_path)) == 8 - kept                     # the bound: what had waited


def test_a_wrong_checkpoint_policy_is_refused(tmp_path):
    (tmp_path / "wf.py").write_text(CKPT)
    r = _run(tmp_path, "--checkpoint", "every=3", "wf.py")
    assert r.returncode == 2 and "tasks=N" in r.stderr


MIXED = textwrap.dedent('''
    from taskflow import task, wait_on

    def mark(what):
        with open("runs.log", "a") as f:
            f.write(what + "\\n")

    @task(returns=int)
    def inc(x):
        mark(f"inc{x}")
        return x + 1

    @task(returns=int)
    def add(x, y):
        mark(f"add{x}")
        return x + y

    @task(returns=bytes)
    def big(n):
        mark("big")
        return b"x" * n

    a = [inc(i) for i in range(5)]
    wait_on(a)                          # ended: their keys are made when b's calls read them
    b = [add(x, 1) for x in a]
    c = inc(7)
    d = add(c, 2)                       # c not ended yet: its key now, from the call
    g = big(400_000)                    # stays on its node, fetched by wait_on: kept too
    print("RESULT", sum(wait_on(b)), wait_on(d), len(wait_on(g)))
''')


def test_plain_calls_kept_as_themselves_resume_with_the_calls_that_read_them(tmp_path):
    """Plain calls' keys are made from their log records (by the reader, or when a later
    call reads their value, ended or not): the same keys as a resumed run computes."""
    (tmp_path / "wf.py").write_text(MIXED)
    r = _run(tmp_path, "wf.py")
    assert r.returncode == 0 and "RESULT 20 10 400000" in r.stdout, r.stderr
    assert len(_ran(tmp_path)) == 13
    for _ in range(2):                  # a resumed run can be resumed in turn
        r = _run(tmp_path, "--resume", "wf.py")
        assert r.returncode == 0 and "RESULT 20 10 400000" in r.stdout, r.stderr
        assert _ran(tmp_path) == [] and "13 task(s) restored, 0 ran again" in r.stderr


ARRAYS = textwrap.dedent('''
    import numpy as np
    from taskflow import task, wait_on

    @task(returns=1)
    def ones(n):
        with open("runs.log", "a") as f:
            f.write(f"ones{n}\\n")
        return np.ones(n)

    big, small = ones(200_000), ones(20_000)     # 1.6 MB stays on its node; 160 kB comes back
    for v in wait_on([big, small]):
        print("SUM", v.sum())
        v[:] = 7.0                  # the program's own array now: the record keeps the value
''')


def test_a_value_the_program_changes_after_wait_on_is_restored_as_the_task_made_it(tmp_path):
    """wait_on builds a large array on the buffer that came (no copy) and the program may
    change it; the resume log wrote the task's value first, so a resume restores ones."""
    (tmp_path / "wf.py").write_text(ARRAYS)
    r = _run(tmp_path, "wf.py")
    assert r.returncode == 0 and "SUM 200000.0" in r.stdout and "SUM 20000.0" in r.stdout, \
        r.stderr
    assert sorted(_ran(tmp_path)) == ["ones20000", "ones200000"]
    r = _run(tmp_path, "--resume", "wf.py")
    assert r.returncode == 0, r.stderr
    assert "SUM 200000.0" in r.stdout and "SUM 20000.0" in r.stdout
    assert _ran(tmp_path) == [] and "2 task(s) restored" in r.stderr


MANY_FILES = textwrap.dedent('''
    import os
    from taskflow import task, FILE_OUT

    @task(out=FILE_OUT)
    def write(out, i):
        with open("runs.log", "a") as f:
            f.write(f"w{i}\\n")
        with open(out, "w") as f:
            f.write(f"{i}\\n")

    for i in range(300):
        write(os.path.join("outs", f"o{i}.txt"), i)
''')


def test_outputs_moved_in_place_more_than_a_frame_of_records_are_all_reused(tmp_path):
    """The end of a run moves each file to its path and tells the resume log, records of
    many files a frame (putinplace.MOVES_PER_RECORD): a resume finds every one of them."""
    (tmp_path / "wf.py").write_text(MANY_FILES)
    (tmp_path / "outs").mkdir()
    r = _run(tmp_path, "wf.py")
    assert r.returncode == 0, r.stderr
    assert len(_ran(tmp_path)) == 300
    assert all((tmp_path / "outs" / f"o{i}.txt").read_text() == f"{i}\n" for i in range(300))
    r = _run(tmp_path, "--resume", "wf.py")
    assert r.returncode == 0, r.stderr
    assert _ran(tmp_path) == [] and "300 task(s) restored, 0 ran again" in r.stderr
