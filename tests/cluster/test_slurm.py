"""Slurm workers against a real local Slurm (munged + slurmctld + 3 slurmd), no mocks.

The cluster comes from testbed/slurm.sh (fixture in slurm_testbed.py):
nodes n1..n3 with 2 CPUs each. Agents dial back to the master on 127.0.0.1.
Waits poll with deadlines; no assertion depends on timing.
"""
from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

import taskflow
from taskflow import task, wait_on
from taskflow.providers import dialback
from taskflow.agent.dialback import connect as dial
from taskflow.errors import NodeStartError, UsageError
from taskflow.providers.slurm import SlurmProvider
from support.waiting import until as _until



@task(returns=1)
def where(x, pause=0.0):
    import os
    import time
    time.sleep(pause)
    return x * x, os.environ.get("SLURM_JOB_ID"), os.environ.get("SLURMD_NODENAME")


def _rt(tmp_path, provider, events=None):
    rt = taskflow.Runtime(providers=[provider], run_dir=str(tmp_path / "runs"), echo_logs=False,
                          journal=False)
    if events is not None:
        rt.bus.subscribe(events.extend)
    return rt


def test_batch_allocation_spans_nodes(slurm, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    events: list = []
    p = SlurmProvider("batch", 3, cpus=2)
    with _rt(tmp_path, p, events) as rt:
        assert len(rt.nodes) == 3
        out = wait_on([where(i, 0.05) for i in range(36)])
        jids = {n.job_id for n in rt.nodes}
    assert [o[0] for o in out] == [i * i for i in range(36)]
    assert len(jids) == 1 and {o[1] for o in out} == jids
    assert {o[2] for o in out} == set(slurm.nodes)       # one agent per allocated node
    joins = [e for e in events if e[0] == "node_join"]
    assert len(joins) == 3 and all(e[5]["job_id"] in jids for e in joins)
    assert slurm.squeue(p.job_name)  # the job is known to Slurm and was ended at stop
    _until(lambda: all(s not in ("RUNNING", "PENDING")
                       for s in slurm.squeue(p.job_name).values()), 30, "the job to end")


def test_pilots_join_a_running_master(slurm, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    events: list = []
    p = SlurmProvider("pilot", 3, cpus=2, max_queued=3)
    with _rt(tmp_path, p, events) as rt:
        assert len(rt.nodes) >= 1                        # work may begin with the first pilot
        first = wait_on(where(7))
        assert first[0] == 49
        _until(lambda: len([n for n in rt.nodes if n.alive]) == 3, 40, "3 pilots to join")
        out = wait_on([where(i, 0.05) for i in range(36)])
        jids = {n.job_id for n in rt.nodes}
    assert [o[0] for o in out] == [i * i for i in range(36)]
    assert len(jids) == 3 and {o[1] for o in out} == jids
    joins = [e for e in events if e[0] == "node_join"]
    assert sorted(e[5]["job_id"] for e in joins) == sorted(jids)
    _until(lambda: all(s not in ("RUNNING", "PENDING")
                       for s in slurm.squeue(p.job_name).values()), 30, "pilots scancelled")


def test_pilot_killed_mid_run(slurm, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    events: list = []
    p = SlurmProvider("pilot", 2, cpus=2, max_queued=2)
    with _rt(tmp_path, p, events) as rt:
        _until(lambda: len([n for n in rt.nodes if n.alive]) == 2, 40, "2 pilots to join")
        futs = [where(i, 0.5) for i in range(16)]
        victim = rt.nodes[0]
        _until(lambda: victim.inflight, 20, "tasks running on the first pilot")
        # SIGKILL to the agent, like a node failure (any scancel sends SIGTERM first and
        # the pilot would drain cleanly: test_sigterm_drains_a_pilot). The testbed's
        # slurmd run on this machine, so the pid is ours to kill.
        os.kill(victim.info["pid"], 9)
        out = wait_on(futs)
        _until(lambda: len(p.submitted) >= 3, 30, "a replacement pilot")
    assert [o[0] for o in out] == [i * i for i in range(16)]
    lost = [e for e in events if e[0] == "node_lost"]
    assert lost and lost[0][4] == victim.name and f"slurm job {victim.job_id}" in lost[0][5]
    assert rt.tally.done == 16 and not rt.failed
    # the user is told how the job ended, in Slurm's words
    _until(lambda: getattr(victim, "slurm_state", None), 30, "the lost job's Slurm state")
    assert victim.slurm_state.split()[0] in ("FAILED", "CANCELLED")
    assert any(e[0] == "node_state" and e[5]["job_id"] == str(victim.job_id) for e in events)


def test_pilot_scancelled_mid_run(slurm, tmp_path, monkeypatch):
    """A plain scancel: Slurm sends SIGTERM, then SIGKILL after KillWait; the pilot drains
    in between, the run is correct and the user sees the job's state."""
    monkeypatch.chdir(tmp_path)
    events: list = []
    p = SlurmProvider("pilot", 2, cpus=2, max_queued=2)
    with _rt(tmp_path, p, events) as rt:
        _until(lambda: len([n for n in rt.nodes if n.alive]) == 2, 40, "2 pilots to join")
        futs = [where(i, 0.5) for i in range(16)]
        victim = rt.nodes[0]
        _until(lambda: victim.inflight, 20, "tasks running on the first pilot")
        subprocess.run(["scancel", str(victim.job_id)], check=True, timeout=15)
        out = wait_on(futs)
        _until(lambda: getattr(victim, "slurm_state", None), 30, "the job's Slurm state")
    assert [o[0] for o in out] == [i * i for i in range(16)]
    assert rt.tally.done == 16 and not rt.failed
    gone = [e for e in events if e[0] in ("node_left", "node_lost") and e[4] == victim.name]
    assert gone and f"slurm job {victim.job_id}" in gone[0][5]
    assert victim.slurm_state.startswith("CANCELLED")


def test_sigterm_drains_a_pilot(slurm, tmp_path, monkeypatch):
    """scancel --signal=TERM --full (what --signal does before the walltime): the pilot's
    running tasks finish on it, its queued ones move, nothing fails or reruns."""
    monkeypatch.chdir(tmp_path)
    events: list = []
    p = SlurmProvider("pilot", 2, cpus=2, max_queued=2)
    with _rt(tmp_path, p, events) as rt:
        _until(lambda: len([n for n in rt.nodes if n.alive]) == 2, 40, "2 pilots to join")
        victim = rt.nodes[0]
        futs = [where(i, 1.0) for i in range(12)]
        _until(lambda: len(victim.inflight) >= 2, 20, "tasks on the first pilot")
        time.sleep(0.3)          # let them start (not an assertion: only makes the test bite)
        running = set(victim.inflight)
        subprocess.run(["scancel", "--signal=TERM", "--full", str(victim.job_id)], check=True,
                       timeout=15)
        out = wait_on(futs)
        _until(lambda: not victim.alive, 30, "the drained pilot to leave")
        assert not rt.failed and rt.tally.retries == 0
    assert [o[0] for o in out] == [i * i for i in range(12)]
    left = [e for e in events if e[0] == "node_left"]
    assert left and left[0][4] == victim.name and "SIGTERM" in left[0][5]
    assert not [e for e in events if e[0] in ("failed", "node_lost")]
    done_on = {e[2]: e[4] for e in events if e[0] == "done"}
    back = {e[2] for e in events if e[0] == "retry" and "handed back" in str(e[5])}
    assert back                                      # it had work it had not started
    assert all(done_on[t] != victim.name for t in back)
    assert all(done_on[t] == victim.name for t in running - back)
    # the job ended by itself once drained (not killed)
    _until(lambda: slurm.squeue(p.job_name).get(str(victim.job_id)) == "COMPLETED", 30,
           "the drained pilot's job to complete")


def test_pilot_throttling_and_idle_exit(slurm, tmp_path, monkeypatch):
    """4 pilots of 2 CPUs on 3 nodes of 2 CPUs: the 4th never starts; at most 1 queued."""
    monkeypatch.chdir(tmp_path)
    p = SlurmProvider("pilot", 4, cpus=2, max_queued=1, idle_timeout=2.0, poll=0.2)
    seen: list = []
    stop = threading.Event()

    def watch():
        while not stop.is_set():
            if getattr(p, "job_name", None):
                seen.append(sum(1 for s in slurm.squeue(p.job_name).values() if s == "PENDING"))
            time.sleep(0.1)

    w = threading.Thread(target=watch, daemon=True)
    w.start()
    try:
        with _rt(tmp_path, p) as rt:
            futs = [where(i, 0.3) for i in range(60)]     # keeps the pilots busy meanwhile
            _until(lambda: len(p.submitted) >= 4, 40, "4 pilots submitted one at a time")
            out = wait_on(futs)
            assert [o[0] for o in out] == [i * i for i in range(60)]
            _until(lambda: len(p.idle_retired) >= 1, 30, "an idle pilot to exit")
            jid = p.idle_retired[0]
            # the agent left by itself: its job completed, nobody cancelled it
            _until(lambda: slurm.squeue(p.job_name).get(jid) == "COMPLETED",
                   30, "the idle pilot's job to complete")
            assert len(p.submitted) == 4         # no replacement while there is no work
            assert rt.tally.done == 60 and not rt.failed
    finally:
        stop.set()
        w.join(5)
    assert seen and max(seen) <= 1
    assert p.max_pending_seen <= 1


def test_dialback_refuses_wrong_secret_and_garbage(tmp_path):
    joined: list = []
    srv = dialback.DialbackServer(lambda meta: {"name": "x", "slots": 1}, joined.append,
                                  ready_timeout=2.0)
    try:
        with pytest.raises((ConnectionError, EOFError, OSError)):
            dial(srv.address, "not-the-secret", {"job_id": "1"}, timeout=5)
        s = socket.create_connection((srv.host, srv.port), timeout=5)
        s.sendall(b"\x00" * 40 + b"garbage" * 10)      # not even TLS
        try:
            assert s.recv(10) == b""              # closed by the master
        except ConnectionResetError:              # (unread garbage makes it a reset)
            pass
        s.close()
        # the real agent with a wrong secret file: refused, exits non-zero, says why
        bad = dialback.write_secret(str(tmp_path / "bad"), "0" * 64)
        env = dict(os.environ, **{dialback.SECRET_FILE_ENV: bad},
                   PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        r = subprocess.run([sys.executable, "-m", "taskflow.node", "--connect", srv.address],
                           env=env, capture_output=True, text=True, timeout=30)
        assert r.returncode == 3 and "cannot join the master" in r.stderr
        _until(lambda: len(srv.refused) >= 3, 10, "3 refusals logged")
        assert all("refused" in m for m in srv.refused)
        assert sum("wrong secret" in m for m in srv.refused) >= 2
        assert joined == []
        assert oct(os.stat(bad).st_mode & 0o777) == "0o600"
    finally:
        srv.close()


def test_bad_partition_reports_slurms_message(slurm, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rt = taskflow.Runtime(providers=[SlurmProvider("batch", 1, partition="nosuchpartition")],
                          run_dir=str(tmp_path / "runs"), echo_logs=False)   # journal on
    with pytest.raises(NodeStartError) as ei:
        rt.start()
    msg = str(ei.value)
    assert "sbatch failed" in msg and "invalid partition" in msg.lower()
    # the journal (started before the nodes) keeps the run that did not start, as failed
    db = sqlite3.connect(os.path.join(rt.run_dir, "journal.db"))
    assert db.execute("SELECT state, n_submitted FROM run").fetchall() == [("failed", 0)]


@task(returns=1, time_out=145)
def long_task(x):
    return x + 1


@task(returns=1, time_out=155)
def longer_than_any_pilot(x):
    return x + 1


@task(returns=1, time_out=400)
def fits_the_longer_job(x):
    return x + 1


def test_walltime_keeps_long_tasks_off_a_pilot_near_its_end(slurm, tmp_path, monkeypatch):
    """A 3-minute pilot with a 30 s drain margin gives a task at most 150 s, less what it has
    run: a task with time_out=145 waits once < 145 s are left, a task of unknown duration
    runs, and a time_out no pilot can ever give (155 s) is refused at call time instead of
    waiting for ever. Once the job's limit is raised (scontrol update, as an administrator
    would) the master learns the later end from the queue: the held one starts, and a longer
    time_out is taken. (Slurm may send --signal up to 60 s early: not before 90 s into the
    job, after this test's first part.)"""
    monkeypatch.chdir(tmp_path)
    p = SlurmProvider("pilot", 1, cpus=2, time_limit="3", drain_margin=30.0, poll_slow=1.0)
    with _rt(tmp_path, p) as rt:
        node = rt.nodes[0]
        end = node.walltime_end
        assert end is not None and end - time.time() < 181
        with pytest.raises(UsageError) as ei:
            longer_than_any_pilot(1)
        msg = str(ei.value)
        assert "longer_than_any_pilot" in msg and "time_out=155" in msg and "150" in msg
        assert "time_limit" in msg and "would wait for ever" in msg
        while node.walltime_end - time.time() - 30 > 143:      # (a few seconds at most)
            time.sleep(0.2)
        lf = long_task(1)                      # submitted first, same priority
        assert wait_on(where(3))[0] == 9       # the short one overtakes it
        assert not lf.done() and lf._producer.state == "READY"   # held back, not dispatched
        subprocess.run(["scontrol", "update", f"JobId={node.job_id}", "TimeLimit=10"],
                       check=True, capture_output=True, timeout=30)
        assert wait_on(lf, timeout=60) == 2
        assert node.walltime_end is not None and node.walltime_end > end + 400
        assert wait_on(fits_the_longer_job(1), timeout=60) == 2   # the job's new end counts


MASTER_THEN_DIES = """\
import sys, time
import taskflow
from taskflow.providers.slurm import SlurmProvider

p = SlurmProvider("pilot", 5, cpus=2, max_queued=5)
with taskflow.Runtime(providers=[p], run_dir=sys.argv[1], echo_logs=False, journal=False):
    while len(p.submitted) < 5:
        time.sleep(0.1)
    print(p.job_name, flush=True)
    time.sleep(600)
"""


def test_pilots_are_scancelled_when_the_master_dies(slurm, tmp_path):
    # 5 pilots of 2 CPUs on 3 nodes of 2: two stay PENDING. A SIGKILLed master
    # never reaches stop(); its reaper must cancel them, or they would start
    # later, hold nodes and fail to dial back.
    (tmp_path / "m.py").write_text(MASTER_THEN_DIES)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    master = subprocess.Popen([sys.executable, "m.py", str(tmp_path / "runs")], cwd=tmp_path,
                              env=env, stdout=subprocess.PIPE, text=True)
    try:
        name = master.stdout.readline().strip()
        assert name.startswith("tf-"), name
        _until(lambda: list(slurm.squeue(name).values()).count("PENDING") >= 1, 30,
               "a pilot left pending")
        pending = [j for j, s in slurm.squeue(name).items() if s == "PENDING"]
    finally:
        master.kill()
        master.wait(10)
    _until(lambda: all(s not in ("RUNNING", "PENDING", "CONFIGURING")
                       for s in slurm.squeue(name).values()), 30, "every pilot to end")
    states = slurm.squeue(name)
    assert all(states[j] == "CANCELLED" for j in pending), states


def test_an_agent_of_another_taskflow_version_is_refused_with_the_fix(slurm, tmp_path,
                                                                      monkeypatch):
    # the pilot's python imports a copy of taskflow that says it is 0.0.1 (an old install
    # on the cluster): the master must refuse it at once, naming both versions and the fix,
    # instead of waiting out the start timeout or failing later on a frame it cannot read
    monkeypatch.chdir(tmp_path)
    old = tmp_path / "old"
    shutil.copytree(os.path.dirname(taskflow.__file__), old / "taskflow",
                    ignore=shutil.ignore_patterns("__pycache__"))
    init = old / "taskflow" / "_version.py"
    init.write_text(init.read_text().replace('__version__ = "0.1.0"', '__version__ = "0.0.1"'))
    assert '"0.0.1"' in init.read_text()
    wrapper = tmp_path / "oldpython"
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH={old} exec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    p = SlurmProvider("pilot", 1, cpus=2, python=str(wrapper))
    rt = _rt(tmp_path, p)
    t0 = time.time()
    with pytest.raises(NodeStartError) as ei:
        rt.start()
    msg = str(ei.value)
    assert "runs taskflow 0.0.1" in msg and "master runs taskflow 0.1.0" in msg, msg
    assert "pip install taskflow-hpc==0.1.0" in msg
    assert time.time() - t0 < 45          # not the 60 s start timeout
    _until(lambda: all(s not in ("RUNNING", "PENDING", "CONFIGURING")
                       for s in slurm.squeue(p.job_name).values()), 30, "the pilot to end")
