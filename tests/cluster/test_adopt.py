"""Agents outlive a killed master; `taskflow run --resume` adopts what they kept running.

Every test runs `taskflow run` as a real process and SIGKILLs it for real; its node agents
(local ones here, SSH hosts on the testbed below) are real processes. Each task appends
``start I`` to ``marks`` when it starts and ``end I`` when it ends, so the marks prove that no
task started twice.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap

import pytest

from support.adoption import (WF, adopted_in_journal, consistent, marks as _marks, said,
                              started as _started)
from support.agents import agents_in as _agents_in
from support.paths import TESTS
from support.waiting import until as _until


def _env(tmp_path, **kw):
    return dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"),
                PYTHONPATH=TESTS, **kw)


def _start(tmp_path, *args, **env):
    # output to files: an agent that outlives the master holds no pipe of the test's
    return subprocess.Popen([sys.executable, "-m", "taskflow", "run", "--no-progress", *args],
                            cwd=tmp_path, env=_env(tmp_path, **env),
                            stdout=open(tmp_path / "out1", "w"),
                            stderr=open(tmp_path / "err1", "w"))


def _resume(tmp_path, *args, run=None, **env):
    return subprocess.run([sys.executable, "-m", "taskflow", "run", "--no-progress",
                           "--resume", *([run] if run else []), *args], cwd=tmp_path,
                          env=_env(tmp_path, **env), capture_output=True, text=True, timeout=90)


def _kill_when(tmp_path, p, cond):
    _until(lambda: cond(_marks(tmp_path)), 30)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(10)


@pytest.mark.parametrize("call", ["plain", "keyed"])
def test_running_tasks_are_adopted_not_started_again(tmp_path, call):
    """A plain call is matched by its code and arguments; a call keyed when it was made
    (here: a keyword argument) by the key its master sent along."""
    (tmp_path / "wf.py").write_text(WF if call == "plain" else WF.replace(
        'slow(i, float(os.environ.get("SECS", "3")))',
        'slow(i, secs=float(os.environ.get("SECS", "3")))'))
    p = _start(tmp_path, "--workers", "2", "wf.py", SECS="-1")      # they end at the gate
    _kill_when(tmp_path, p, lambda m: len(_started(m)) == 2)      # two run, two queued
    (first,) = os.listdir(tmp_path / "runs")
    before = _marks(tmp_path)
    r = _resume_then_open(tmp_path, first, 2, "--workers", "2", "wf.py", SECS="-1")
    assert r.returncode == 0, r.stderr
    assert "SUM 60" in r.stdout
    assert _started(_marks(tmp_path)) == [f"start {i}" for i in range(4)]   # each once
    (new,) = set(os.listdir(tmp_path / "runs")) - {first}
    n = consistent(r.stderr, tmp_path / "runs" / new, before, _marks(tmp_path), 4)
    # the two running at the kill were still running when adopted (the gate was shut)
    assert n["running"] == 2 and n["collected"] == n["restored"] == 0, r.stderr
    assert "2 running task(s) adopted on local" in r.stderr
    _until(lambda: not _agents_in(tmp_path), 10)        # the adopted agent ended with the run


def _resume_then_open(tmp_path, first, adopted, *args, **env):
    """``--resume``, and once its journal recorded ``adopted`` calls as ADOPTED, the gate
    opened (so the tasks adopted were running: they cannot end before)."""
    p = subprocess.Popen([sys.executable, "-m", "taskflow", "run", "--no-progress",
                          "--resume", first, *args], cwd=tmp_path, env=_env(tmp_path, **env),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _until(lambda: sum(adopted_in_journal(d).values()) >= adopted
               if (d := _new_run(tmp_path, first)) is not None else False, 60,
               "the resumed run to record its adoptions")
    finally:
        (tmp_path / "gate").touch()
    out, err = p.communicate(timeout=90)
    return subprocess.CompletedProcess(p.args, p.returncode, out, err)


def _new_run(tmp_path, first):
    """The resumed run's directory once its journal exists (None before)."""
    new = set(os.listdir(tmp_path / "runs")) - {first}
    if not new:
        return None
    d = tmp_path / "runs" / new.pop()
    return d if (d / "journal.db").exists() else None


def test_results_that_finished_while_no_master_was_there_are_collected(tmp_path):
    """The two tasks running at the kill end after it (a gate the test opens then): their
    results, held on the node, are collected; every task ends once, whatever else ended
    meanwhile (a task queued behind them on the node is collected too)."""
    (tmp_path / "wf.py").write_text(WF)
    p = _start(tmp_path, "--workers", "2", "wf.py", SECS="-1")
    _kill_when(tmp_path, p, lambda m: len(_started(m)) == 2)
    (first,) = os.listdir(tmp_path / "runs")
    (tmp_path / "gate").touch()
    _until(lambda: sum(m.startswith("end") for m in _marks(tmp_path)) >= 2)  # ended, held
    before = _marks(tmp_path)
    r = _resume(tmp_path, "--workers", "2", "wf.py", SECS="-1")
    assert r.returncode == 0, r.stderr
    assert "SUM 60" in r.stdout
    assert _started(_marks(tmp_path)) == [f"start {i}" for i in range(4)]
    (new,) = set(os.listdir(tmp_path / "runs")) - {first}
    n = consistent(r.stderr, tmp_path / "runs" / new, before, _marks(tmp_path), 4)
    assert n["collected"] >= 2 and n["restored"] == 0, r.stderr


def test_an_agent_whose_grace_ran_out_leaves_nothing(tmp_path):
    (tmp_path / "wf.py").write_text(WF)
    p = _start(tmp_path, "--workers", "2", "--adopt-grace", "1", "wf.py", SECS="60")
    _kill_when(tmp_path, p, lambda m: len(_started(m)) == 2)
    assert _agents_in(tmp_path)                         # kept for a master, for a second
    _until(lambda: not _agents_in(tmp_path), 15)        # then gone, with its tasks
    assert not list((tmp_path / "runs").glob("*/data/spill-*"))     # and its spill files
    assert len(_started(_marks(tmp_path))) == 2 and not [m for m in _marks(tmp_path)
                                                         if m.startswith("end")]
    r = _resume(tmp_path, "--workers", "2", "wf.py", SECS="0")
    assert r.returncode == 0 and "SUM 60" in r.stdout, r.stderr
    assert "adopted" not in r.stderr


def test_a_second_master_resuming_the_run_is_refused(tmp_path):
    (tmp_path / "wf.py").write_text(WF)
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "--no-progress", "wf.py"],
                       cwd=tmp_path, env=_env(tmp_path, SECS="0"), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    (run,) = os.listdir(tmp_path / "runs")
    from taskflow.providers.adopting import lock
    fd = lock(str(tmp_path / "runs" / run))            # a first master resumes it
    try:
        r = _resume(tmp_path, "wf.py")
    finally:
        os.close(fd)
    assert r.returncode == 2
    assert f"is being resumed already, by pid {os.getpid()} on {socket.gethostname()}" \
        in r.stderr


def test_a_master_without_the_runs_secret_adopts_nothing_and_says_why(tmp_path):
    (tmp_path / "wf.py").write_text(WF)
    p = _start(tmp_path, "--workers", "2", "wf.py", SECS="-1")   # (none ends before the kill)
    _kill_when(tmp_path, p, lambda m: len(_started(m)) == 2)
    (run,) = os.listdir(tmp_path / "runs")
    (tmp_path / "runs" / run / "adopt.secret").write_text("0" * 64)    # another run's
    (tmp_path / "gate").touch()
    r = _resume(tmp_path, "--workers", "2", "wf.py", SECS="-1")
    assert r.returncode == 0 and "SUM 60" in r.stdout, r.stderr
    assert "the agent refused this master: it does not hold the secret of run" in r.stderr
    assert "adopted" not in r.stderr
    started = _started(_marks(tmp_path))
    assert len(started) == 6                            # the two kept ones ran again
    assert _agents_in(tmp_path)         # the agent refused it and still waits for its master
    for pid in _agents_in(tmp_path):                    # the refusing agent: not ours to wait
        try:                                            # for (SIGTERM ends it at once, and
            os.kill(pid, signal.SIGTERM)                # its executors with it)
        except ProcessLookupError:
            pass
    _until(lambda: not _agents_in(tmp_path), 10)


def test_ssh_agents_are_adopted_through_the_bridge(ssh_hosts, tmp_path):
    hosts = ssh_hosts.hosts
    (tmp_path / "cluster.yaml").write_text(f"known_hosts: {ssh_hosts.known_hosts}\n"
                                           f"heartbeat_timeout: 3\nnodes:\n" + "".join(f"""\
  - name: h{i}
    host: {h}
    user: root
    identity_file: {ssh_hosts.key}
    computing_units: 1
    python: {sys.executable}
    working_dir: {tmp_path}/wd-h{i}
""" for i, h in enumerate(hosts, 1)))
    (tmp_path / "wf.py").write_text(WF)
    p = _start(tmp_path, "--cluster", "cluster.yaml", "wf.py", SECS="-1")
    _kill_when(tmp_path, p, lambda m: len(_started(m)) == 2)      # one on each host
    (first,) = os.listdir(tmp_path / "runs")
    before = _marks(tmp_path)
    r = _resume_then_open(tmp_path, first, 2, "--cluster", "cluster.yaml", "wf.py", SECS="-1")
    assert r.returncode == 0, r.stderr
    assert "SUM 60" in r.stdout
    assert _started(_marks(tmp_path)) == [f"start {i}" for i in range(4)]
    assert "2 running task(s) adopted on h1, h2" in r.stderr, r.stderr
    (new,) = set(os.listdir(tmp_path / "runs")) - {first}
    n = consistent(r.stderr, tmp_path / "runs" / new, before, _marks(tmp_path), 4)
    assert n["running"] == 2 and n["collected"] == n["restored"] == 0, n   # (the others:
    #                                       queued behind them there, or run again)
    _until(lambda: not any(_agents_in(w) for w in (tmp_path, tmp_path / "wd-h1",
                                                   tmp_path / "wd-h2")), 10)   # none left


def test_an_agent_cut_off_waits_and_is_dismissed_when_the_run_ends(ssh_hosts, tmp_path,
                                                                   monkeypatch):
    """h1's link is cut mid-run: its agent hears no PING for the heartbeat time-out and
    keeps its tasks for a resumed master; the master takes h1 for lost and finishes on h2;
    the link is back before the end, so the master reaches h1's agent again (it takes h1
    back into the run: tests/cluster/test_rejoin.py) or, once the run ends, stops it (instead of
    leaving it to wait out its grace)."""
    import taskflow
    from support import ssh_tasks as S
    monkeypatch.chdir(tmp_path)
    prov = ssh_hosts.provider(ssh_hosts.nodes(tmp_path))
    with taskflow.Runtime(providers=[prov], run_dir=str(tmp_path / "runs"),
                          retries=0, placement="fifo") as rt:
        squares = [S.slow_square(i, 8.0 if i < 4 else 0.2) for i in range(12)]
        with ssh_hosts.flap(1, 4.0, after=1.0) as healed:
            got = taskflow.wait_on(squares)
            assert [n.name for n in rt.nodes if not n.alive] == ["h1"]
            assert healed.wait(30)
            assert _agents_in(tmp_path / "wd-h1")      # h1's agent waits for a master
    assert got == [i * i for i in range(12)]
    _until(lambda: not _agents_in(tmp_path / "wd-h1"), 15)     # dismissed, not 600 s later


WF_FILES = textwrap.dedent('''
    import os, sys, time
    from taskflow import task, wait_on, FILE_OUT, FILE_IN, FILE_INOUT

    HERE = os.path.dirname(os.path.abspath(__file__))
    MARKS = os.path.join(HERE, "marks")

    def mark(what):
        with open(MARKS, "a") as f:
            f.write(what + "\\n")

    @task(out=FILE_OUT)
    def make(i, out):
        mark(f"start {i}")
        time.sleep(3)
        with open(out, "w") as f:
            f.write(f"made {i}\\n")
        mark(f"end {i}")

    @task(log=FILE_INOUT)
    def append(i, log):
        mark(f"start a{i}")
        time.sleep(3)
        with open(log, "a") as f:
            f.write(f"appended {i}\\n")
        mark(f"end a{i}")

    @task(returns=str, src=FILE_IN)
    def read(src):
        with open(src) as f:
            return f.read()

    with open(os.path.join(HERE, "log.txt"), "w") as f:
        f.write("begin\\n")
    made = [os.path.join(HERE, f"made{i}.txt") for i in range(2)]
    for i, path in enumerate(made):
        make(i, path)
    append(0, os.path.join(HERE, "log.txt"))
    print("READ", wait_on([read(p) for p in made]), flush=True)
''')


def test_calls_that_write_files_are_adopted_with_their_versions(tmp_path):
    """FILE_OUT and FILE_INOUT calls running at the kill are claimed like any keyed call:
    they write the versions the earlier master planned (in its run directory), the resumed
    run reads those and puts the last one at the user's path at its end."""
    (tmp_path / "wf.py").write_text(WF_FILES)
    p = _start(tmp_path, "--workers", "3", "wf.py")
    _kill_when(tmp_path, p, lambda m: len(_started(m)) == 3)       # all three writers run
    (first,) = os.listdir(tmp_path / "runs")
    (tmp_path / "log.txt").write_text("begin\n")    # (the script writes it again, the same)
    r = _resume(tmp_path, "--workers", "3", "wf.py", run=first)
    assert r.returncode == 0, r.stderr
    assert "READ ['made 0\\n', 'made 1\\n']" in r.stdout
    assert _started(_marks(tmp_path)) == ["start 0", "start 1", "start a0"]    # each once
    n = said(r.stderr)          # (3 s tasks: running, or ended at the resume: collected)
    assert n["running"] + n["collected"] + n["restored"] == 3, r.stderr
    assert (tmp_path / "made0.txt").read_text() == "made 0\n"
    assert (tmp_path / "made1.txt").read_text() == "made 1\n"
    assert (tmp_path / "log.txt").read_text() == "begin\nappended 0\n"
    _until(lambda: not _agents_in(tmp_path), 10)


def test_kept_tasks_no_call_claims_are_cancelled_and_the_agent_runs_the_new_calls(tmp_path):
    """The resumed script calls with other arguments: the kept tasks are cancelled on the
    adopted agent (their executors killed) and the new calls run there, on new executors
    (a forked executor once closed the lost master's stale descriptor numbers and died)."""
    (tmp_path / "wf.py").write_text(WF)
    p = _start(tmp_path, "--workers", "2", "wf.py", SECS="30")
    _kill_when(tmp_path, p, lambda m: len(_started(m)) == 2)
    r = _resume(tmp_path, "--workers", "2", "wf.py", SECS="0.2")
    assert r.returncode == 0, r.stderr
    assert "SUM 60" in r.stdout and "adopted" not in r.stderr
    marks = _marks(tmp_path)
    assert len(_started(marks)) == 6 and marks.count("end 0") == 1     # killed, not ended
    _until(lambda: not _agents_in(tmp_path), 10)


def test_a_run_resumed_on_other_kinds_of_nodes_says_what_it_leaves(ssh_hosts, tmp_path):
    """Local workers killed with their master, the run resumed on SSH hosts: the local
    agents cannot be adopted there, and the summary says so (they wait out their grace)."""
    (tmp_path / "cluster.yaml").write_text(
        f"known_hosts: {ssh_hosts.known_hosts}\nnodes:\n  - name: h1\n"
        f"    host: {ssh_hosts.hosts[0]}\n    user: root\n    identity_file: {ssh_hosts.key}\n"
        f"    computing_units: 2\n    python: {sys.executable}\n"
        f"    working_dir: {tmp_path}/wd-h1\n")
    (tmp_path / "wf.py").write_text(WF)
    p = _start(tmp_path, "--workers", "2", "wf.py", SECS="2")
    _kill_when(tmp_path, p, lambda m: len(_started(m)) == 2)
    (run,) = os.listdir(tmp_path / "runs")
    r = _resume(tmp_path, "--cluster", "cluster.yaml", "wf.py", SECS="2")
    assert r.returncode == 0 and "SUM 60" in r.stdout, r.stderr
    assert f"adopts nothing from run {run} on its local nodes (local): this run has no " \
        "local nodes (another cluster file?)" in r.stderr
    for pid in _agents_in(tmp_path):        # (they would wait out the 600 s grace)
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    _until(lambda: not _agents_in(tmp_path), 10)
