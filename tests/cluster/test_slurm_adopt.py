"""A resumed master adopts the Slurm jobs (batch and pilot) its SIGKILLed predecessor left.

On the real Slurm testbed (testbed/slurm.sh: n1..n3, 2 CPUs each): `taskflow run
--slurm batch|pilot` runs 4 tasks on 2 single-slot nodes and is SIGKILLed for real while
two run; its dial-back agents keep them running and wait; `taskflow run --resume` at once
finds them (they dial its address from the adoption file), adopts the two tasks and runs the
two others. Each task appends ``start I`` / ``end I`` to ``marks``: no task starts twice.
"""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys

import pytest

from support.adoption import WF, consistent, marks as _marks, said, started as _started
from support.agents import agents_in as _agents_in
from support.waiting import until as _until

SLURM = ["--slurm-nodes", "2", "--slurm-opt", "cpus=1"]


def _env(tmp_path, **kw):
    return dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"),
                PYTHONPATH=os.pathsep.join(p for p in sys.path if p), **kw)


def _start(tmp_path, mode, *args, **env):
    # output to files: an agent that outlives the master holds no pipe of the test's
    return subprocess.Popen([sys.executable, "-m", "taskflow", "run", "--no-progress",
                             "--slurm", mode, *SLURM, *args, "wf.py"], cwd=tmp_path,
                            env=_env(tmp_path, **env), stdout=open(tmp_path / "out1", "w"),
                            stderr=open(tmp_path / "err1", "w"))


def _resume(tmp_path, mode, *args, **env):
    return subprocess.run([sys.executable, "-m", "taskflow", "run", "--no-progress",
                           "--resume", "--slurm", mode, *SLURM, *args, "wf.py"], cwd=tmp_path,
                          env=_env(tmp_path, **env), capture_output=True, text=True,
                          timeout=100)


def _killed_with_two_running(tmp_path, mode, *args, **env):
    """The first run, SIGKILLed once two tasks started; its run id."""
    (tmp_path / "wf.py").write_text(WF)
    p = _start(tmp_path, mode, *args, **env)
    try:
        _until(lambda: len(_started(_marks(tmp_path))) == 2, 60, "two tasks to start")
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
    (run,) = os.listdir(tmp_path / "runs")
    return run


def _over(slurm, *names):
    return all(s not in ("RUNNING", "PENDING", "CONFIGURING", "COMPLETING")
               for n in names for s in slurm.squeue(n).values())


@pytest.mark.parametrize("mode", ["batch", "pilot"])
def test_running_tasks_on_slurm_nodes_are_adopted_not_started_again(slurm, tmp_path, mode):
    first = _killed_with_two_running(tmp_path, mode)
    old = slurm.squeue(f"tf-{first}")
    assert "RUNNING" in old.values(), old        # the reaper left the running jobs alone
    before = _marks(tmp_path)
    r = _resume(tmp_path, mode)
    assert r.returncode == 0, r.stderr
    assert "SUM 60" in r.stdout
    assert _started(_marks(tmp_path)) == [f"start {i}" for i in range(4)]   # each once
    (new,) = set(os.listdir(tmp_path / "runs")) - {first}
    # the two running at the kill and any queued behind them on the nodes' executors:
    # running, or collected if they ended before the resume reached them; the rest again
    n = consistent(r.stderr, tmp_path / "runs" / new, before, _marks(tmp_path), 4)
    assert n["running"] + n["queued"] + n["collected"] + n["restored"] >= 2, r.stderr
    db = sqlite3.connect(tmp_path / "runs" / new / "journal.db")
    nodes = {nd for (nd,) in db.execute("SELECT node FROM transitions WHERE state='ADOPTED'")}
    db.close()
    prefix = "slurm-" if mode == "batch" else "pilot-"
    assert len(nodes) == 2 and all(nd.startswith(prefix) for nd in nodes), nodes  # the
    #                                                   earlier names, one task on each
    # the earlier jobs are the run's now (renamed), and whole: nothing was submitted
    assert set(slurm.squeue(f"tf-{new}")) == set(old)
    _until(lambda: _over(slurm, f"tf-{first}", f"tf-{new}"), 30, "every job to end")
    _until(lambda: not _agents_in(tmp_path), 15, "no agent left")


def test_results_that_finished_while_no_master_was_there_are_collected(slurm, tmp_path):
    """The two tasks running at the kill end after it (a gate the test opens then): their
    held results are collected, each task once. How many in all ended while no master was
    there (those queued behind them on the nodes too: 4 on a loaded machine) is what the
    agents listed: the journal's collected calls agree with the line, and with the marks."""
    first = _killed_with_two_running(tmp_path, "batch", SECS="-1")
    (tmp_path / "gate").touch()
    _until(lambda: sum(m.startswith("end") for m in _marks(tmp_path)) >= 2, 30,
           "two tasks to end while no master is there")
    before = _marks(tmp_path)
    r = _resume(tmp_path, "batch", SECS="-1")
    assert r.returncode == 0, r.stderr
    assert "SUM 60" in r.stdout
    assert _started(_marks(tmp_path)) == [f"start {i}" for i in range(4)]
    (new,) = set(os.listdir(tmp_path / "runs")) - {first}
    n = consistent(r.stderr, tmp_path / "runs" / new, before, _marks(tmp_path), 4)
    assert n["collected"] >= 2 and n["restored"] == 0, r.stderr


def test_slurm_agents_whose_grace_ran_out_end_their_jobs(slurm, tmp_path):
    first = _killed_with_two_running(tmp_path, "pilot", "--adopt-grace", "2", SECS="60")
    assert "RUNNING" in slurm.squeue(f"tf-{first}").values()      # kept, for 2 s
    _until(lambda: _over(slurm, f"tf-{first}"), 30, "the jobs to end by themselves")
    assert "CANCELLED" not in slurm.squeue(f"tf-{first}").values()
    _until(lambda: not _agents_in(tmp_path), 15, "no agent left")
    assert not list((tmp_path / "runs").glob("*/data/spill-*"))
    assert len(_started(_marks(tmp_path))) == 2
    assert not [m for m in _marks(tmp_path) if m.startswith("end")]    # stopped


def test_a_resumed_master_without_the_runs_secret_adopts_nothing(slurm, tmp_path):
    first = _killed_with_two_running(tmp_path, "batch")
    at_kill = _started(_marks(tmp_path))
    (tmp_path / "runs" / first / "adopt.secret").write_text("0" * 64)    # another run's
    r = _resume(tmp_path, "batch", SECS="0.2")
    assert r.returncode == 0 and "SUM 60" in r.stdout, r.stderr
    assert "the agent refused this master: it does not hold the secret of run" in r.stderr
    assert "task(s) adopted" not in r.stderr
    # the resumed run ran all four; the two kept ones so ran again (and a task queued behind
    # them on the refusing agents may have started there too before their job was cancelled)
    started = _started(_marks(tmp_path))
    assert sorted(set(started)) == [f"start {i}" for i in range(4)], started
    assert all(started.count(s) == 2 for s in at_kill), started
    assert all(started.count(s) <= 2 for s in set(started)), started
    err = "".join(p.read_text() for p in (tmp_path / "runs" / first / "slurm").glob("*.out"))
    assert "did not rejoin the master" in err and "did not prove the run's secret" in err
    # the refusing agents' job would hold its nodes for the grace: cancelled, and said why
    assert f"cancelled the earlier run's running job(s) {_job(slurm, first)}, not adopted " \
        f"(2 refused, the last: node " in r.stderr, r.stderr
    _until(lambda: _over(slurm, f"tf-{first}"), 30, "the refusing agents' job to end")
    _until(lambda: not _agents_in(tmp_path), 15, "no agent left")


def _job(slurm, run):
    (jid,) = slurm.squeue(f"tf-{run}")
    return jid


def test_a_run_resumed_twice_adopts_the_same_jobs_again(slurm, tmp_path):
    """The resumed master is SIGKILLed too, once it adopted the tasks: a second resume
    adopts them again (the jobs are the resumed run's now) and none starts twice."""
    first = _killed_with_two_running(tmp_path, "batch", SECS="8")
    p = subprocess.Popen([sys.executable, "-m", "taskflow", "run", "--no-progress", "--resume",
                          "--slurm", "batch", *SLURM, "wf.py"], cwd=tmp_path,
                         env=_env(tmp_path, SECS="8"), stdout=open(tmp_path / "out2", "w"),
                         stderr=open(tmp_path / "err2", "w"))
    try:
        _until(lambda: "adopted" in _transitions(tmp_path, first), 60, "the adoption")
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
    (second,) = set(os.listdir(tmp_path / "runs")) - {first}
    assert "RUNNING" in slurm.squeue(f"tf-{second}").values()     # renamed: the run's now
    r = _resume(tmp_path, "batch", SECS="8")
    assert r.returncode == 0, r.stderr
    assert "SUM 60" in r.stdout
    assert _started(_marks(tmp_path)) == [f"start {i}" for i in range(4)]   # each once
    n = said(r.stderr)          # (8 s tasks: running, or collected if they ended by then)
    assert n["running"] + n["queued"] + n["collected"] + n["restored"] >= 2, r.stderr
    assert "adopted on slurm-" in r.stderr or n["collected"] + n["restored"] >= 2, r.stderr
    _until(lambda: _over(slurm, f"tf-{first}", f"tf-{second}"), 30, "every job to end")
    _until(lambda: not _agents_in(tmp_path), 15, "no agent left")


def _transitions(tmp_path, first):
    """The states the resumed run's journal recorded so far ("" before it exists)."""
    new = set(os.listdir(tmp_path / "runs")) - {first}
    if not new:
        return ""
    try:
        db = sqlite3.connect(f"file:{tmp_path / 'runs' / new.pop() / 'journal.db'}?mode=ro",
                             uri=True)
        try:
            rows = db.execute("SELECT DISTINCT state FROM transitions").fetchall()
        finally:
            db.close()
    except sqlite3.Error:
        return ""
    return " ".join(s.lower() for (s,) in rows)


def test_a_batch_allocation_that_lost_a_node_gets_only_the_missing_one(slurm, tmp_path):
    """One of the two agents dies with the master (SIGKILL, with its executor): the resumed
    master adopts the other, submits a job of one node for the missing one, and the tasks
    kept on the surviving node do not start again."""
    import psutil
    first = _killed_with_two_running(tmp_path, "batch", SECS="4")
    (old,) = slurm.squeue(f"tf-{first}")
    agents = [a for a in map(psutil.Process, _agents_in(tmp_path)) if a.name() != "srun"]
    heads = [a for a in agents if a.ppid() not in {b.pid for b in agents}]
    assert len(heads) == 2, heads
    lost = heads[0]
    lost_tasks = len([c for c in lost.children(recursive=True)])
    for p in [lost, *lost.children(recursive=True)]:
        p.kill()
    r = _resume(tmp_path, "batch", SECS="4")
    assert r.returncode == 0, r.stderr
    assert "SUM 60" in r.stdout
    (new,) = set(os.listdir(tmp_path / "runs")) - {first}
    db = sqlite3.connect(tmp_path / "runs" / new / "journal.db")
    nodes = {nd for (nd,) in db.execute("SELECT node FROM transitions WHERE state='ADOPTED'")}
    db.close()          # (its task adopted running, or collected if it ended by then)
    assert len(nodes) == 1 and nodes.pop().startswith(f"slurm-{old}-"), r.stderr  # one node
    jobs = slurm.squeue(f"tf-{new}")
    assert old in jobs and len(jobs) == 2, jobs         # the adopted one and one more
    marks = _started(_marks(tmp_path))
    assert sorted(set(marks)) == [f"start {i}" for i in range(4)]
    assert len(marks) - 4 <= 2 and lost_tasks >= 1      # only the lost node's ran again
    _until(lambda: _over(slurm, f"tf-{first}", f"tf-{new}"), 30, "every job to end")
    _until(lambda: not _agents_in(tmp_path), 15, "no agent left")


def test_the_adoption_proofs_on_a_dial_back_connection(tmp_path):
    """No Slurm needed: the resumed master's checks of an earlier run's dial-back agent, on
    a real DialbackServer over TLS. Another run's agent, a job that is not the earlier run's,
    or a master without the earlier run's secret: refused before any frame, with why; the
    right one: HELLO after both proofs."""
    import ssl
    from taskflow.agent.dialback import connect
    from taskflow.providers.adopting import AdoptFrom
    from taskflow.providers.dialback import DialbackServer
    from taskflow.providers.slurm import SlurmProvider
    from taskflow.providers.slurm.adopt import JobAdoption
    from taskflow.wire import adoption
    from taskflow.wire import messages as M
    from taskflow.wire import protocol as P
    from taskflow.wire.tlschannel import TlsChannel

    old_secret = adoption.new_secret()
    jobs = JobAdoption(SlurmProvider("batch", 1), AdoptFrom("R1", old_secret, {},
                                                            str(tmp_path)))
    jobs.running = {"77": 1}
    server = DialbackServer(lambda meta: {"name": meta["adopt"]["node"], "slots": 1},
                            lambda h: None, ready_timeout=5)
    server.adopt_check = jobs.check
    try:
        def dial(run: str, job: str, secret: str) -> ssl.SSLSocket:
            sock = connect(server.address, server.secret, {"job_id": job, "cpus": 1,
                                                           "adopt": {"run": run, "node": "n1"}})
            sock.setblocking(False)
            try:
                adoption.agent_side(sock, secret, run, "n1")
            except BaseException:
                sock.close()
                raise
            return sock

        with pytest.raises(adoption.Refused):
            dial("R0", "77", old_secret)
        with pytest.raises(adoption.Refused):
            dial("R1", "78", old_secret)
        with pytest.raises(adoption.Refused, match="the master did not prove the run's secret"):
            dial("R1", "77", adoption.new_secret())      # an agent of another secret refuses
        _until(lambda: len(server.refused) == 3, 10, "three refusals")
        assert "an agent of run R0 asks to be adopted; this master resumes run R1" \
            in server.refused[0]
        assert "node n1: its job 78 is not a running job of run R1" in server.refused[1]
        assert "the agent refused this master" in server.refused[2]
        sock = dial("R1", "77", old_secret)             # the right agent: both proofs pass
        sock.setblocking(True)
        op, hello = P.read_frame_blocking(TlsChannel(sock))
        assert op == M.HELLO and hello["name"] == "n1"
        sock.close()
    finally:
        server.close()
