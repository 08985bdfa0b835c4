"""A host declared lost whose link comes back rejoins the running run (issue 27, target g).

On the real SSH testbed: h1's veth is set down (its connections stay open, nothing gets
through) for longer than the heartbeat time-out, then up again. Each task appends
``start I HOST`` / ``end I HOST`` to a marks file, so the marks prove what ran where and
that no task finished twice.
"""
from __future__ import annotations

import sqlite3
import time

import pytest

import taskflow
from taskflow import wait_on
from taskflow.errors import TaskError

from support import ssh_tasks as S
from support.agents import agents_gone
from support.waiting import until as _until


def _marks(path):
    return [tuple(line.split()) for line in path.read_text().splitlines()] \
        if path.exists() else []


def _start(n, plan, marks):
    """``n`` marked tasks, once every one has started: their futures and the hosts they
    started on, sorted."""
    futs = [S.marked(i, plan, str(marks)) for i in range(n)]
    _until(lambda: sum(m[0] == "start" for m in _marks(marks)) >= n, 20)
    return futs, sorted(m[2] for m in _marks(marks) if m[0] == "start")


def test_a_host_cut_off_then_back_rejoins_and_its_kept_tasks_are_used(ssh_hosts, tmp_path,
                                                                      monkeypatch):
    """Two tasks start on each host (the first on h1 runs 12 s, the second 3 s; on h2 11 s
    and 0.5 s); h1 is cut. The master takes h1 for lost (heartbeat 3 s) and reruns one of
    its tasks on h2's free slot (12 s there); the other waits for a slot. h1's agent keeps
    both (its 3 s task ends there, the result held). The link is back after 6 s; the
    master reaches h1's agent again: the held result is used, the running task kept, and
    the copy on h2 stopped. Every task ends once; h1 takes work again."""
    monkeypatch.chdir(tmp_path)
    marks = tmp_path / "marks"
    prov = ssh_hosts.provider(ssh_hosts.nodes(tmp_path))
    plan = {"h1": [12.0, 3.0], "h2": [11.0, 0.5], "again": 12.0}
    with taskflow.Runtime(providers=[prov], run_dir=str(tmp_path / "runs"), retries=0) as rt:
        futs, hosts = _start(4, plan, marks)
        assert hosts == ["h1", "h1", "h2", "h2"], hosts
        with ssh_hosts.flap(1, 6.0):
            got = wait_on(futs)
            after = [h for h, _ in wait_on([S.where(0.5) for _ in range(8)])]  # h1 works again
            h1 = [n for n in rt.nodes if n.name == "h1"]
            run_id, run_dir = rt.run_id, rt.run_dir
            backs = rt.recovery.comebacks.backs
    assert got == [0, 10, 20, 30]
    assert [n.alive for n in h1] == [False, True]           # lost, then back
    (back,) = backs
    assert (back.node, back.held, back.running, back.cancelled) == ("h1", 1, 1, 0)
    assert "h1" in after
    m = _marks(marks)
    first = {i: h for what, i, h in reversed(m) if what == "start"}   # where each began
    ends = sorted((i, h) for what, i, h in m if what == "end")
    assert ends == sorted(first.items())              # each ended once, where it began
    again = [(i, h) for what, i, h in m if what == "start"][4:]    # h1's, sent to h2 while
    assert again and all(h == "h2" and first[i] == "h1" for i, h in again), m   # h1 was away
    db = sqlite3.connect(f"{run_dir}/journal.db")
    try:
        rows = db.execute("SELECT t_lost IS NOT NULL FROM nodes WHERE name='h1' "
                          "ORDER BY rowid").fetchall()
        lines = [r[0] for r in db.execute("SELECT line FROM logs WHERE task_id=0")]
        adopted = db.execute("SELECT task_id FROM transitions WHERE state='ADOPTED' "
                             "ORDER BY task_id").fetchall()
        ended = db.execute("SELECT * FROM run").fetchone()
    finally:
        db.close()
    assert rows == [(1,), (0,)]
    assert any(line.startswith("node h1 back after ") and
               "1 held result used, 1 running task kept" in line for line in lines), lines
    assert len(adopted) == 2
    assert run_id and ended is not None
    agents_gone(tmp_path / "wd-h1", 15)                         # ended with the run


def test_a_host_whose_agent_died_gets_a_fresh_one_and_its_values_are_made_again(
        ssh_hosts, tmp_path, monkeypatch):
    """Every process of h1's namespace is SIGKILLed (a host crash; its sshd comes back): no
    agent waits there, so the master starts a fresh one and h1 rejoins the run. The values
    that lived on h1 are not looked for there (the fresh agent has none): they are made
    again from their calls."""
    monkeypatch.chdir(tmp_path)
    prov = ssh_hosts.provider(ssh_hosts.nodes(tmp_path))
    try:
        with taskflow.Runtime(providers=[prov], run_dir=str(tmp_path / "runs"),
                              retries=0) as rt:
            bigs = [S.big(i, 0.02) for i in range(6)]
            taskflow.barrier()
            assert any(b._holders == {"h1"} for b in bigs), "placement put nothing on h1"
            ssh_hosts.kill(1)
            ssh_hosts.restart(1)                # (its sshd back: the host rebooted)
            _until(lambda: [n.alive for n in rt.nodes if n.name == "h1"] == [False, True], 40)
            sums = wait_on([S.checksum(b, 0.02) for b in bigs])
            hosts = [h for h, _ in wait_on([S.where(0.5) for _ in range(8)])]
            (back,) = rt.recovery.comebacks.backs
    finally:
        ssh_hosts.restart(1)
    assert sums == [(1 << 20) * i for i in range(6)]
    assert back.fresh and back.line().startswith("h1 back after ")
    assert "h1" in hosts


def test_tasks_that_finished_elsewhere_meanwhile_are_stopped_on_the_host_back(
        ssh_hosts, tmp_path, monkeypatch):
    """Both of h1's tasks (12 s) run again on h2 while h1 is cut off, and end there (1 s)
    before h1 is back: the copies h1 kept are cancelled there, never finished twice."""
    monkeypatch.chdir(tmp_path)
    marks = tmp_path / "marks"
    prov = ssh_hosts.provider(ssh_hosts.nodes(tmp_path))
    plan = {"h1": [12.0, 12.0], "h2": [0.5, 0.5], "again": 1.0}
    with taskflow.Runtime(providers=[prov], run_dir=str(tmp_path / "runs"), retries=0) as rt:
        futs, hosts = _start(4, plan, marks)
        assert hosts == ["h1", "h1", "h2", "h2"], hosts
        started = time.time()
        with ssh_hosts.flap(1, 6.0):
            got = wait_on(futs)
            _until(lambda: bool(rt.recovery.comebacks.backs), 20)
            (back,) = rt.recovery.comebacks.backs
        time.sleep(max(0.0, started + 13.0 - time.time()))    # past h1's copies' own end
    assert got == [0, 10, 20, 30]
    assert (back.held, back.running, back.cancelled) == (0, 0, 2)
    m = _marks(marks)
    ends = sorted(i for what, i, _ in m if what == "end")
    assert ends == ["0", "1", "2", "3"], m                  # each once
    assert not [i for what, i, h in m if what == "end" and h == "h1"], m   # h1's: stopped
    agents_gone(tmp_path / "wd-h1", 15)


def test_a_run_whose_only_host_is_cut_off_waits_for_it_and_finishes_there(ssh_hosts, tmp_path,
                                                                         monkeypatch, capfd):
    """h1 is the run's only node; its link is cut for 6 s while both its tasks run. The run
    does not fail for want of nodes: it says it reaches h1 again, waits, and takes h1 back
    with its kept tasks; every task ends once, on h1."""
    monkeypatch.chdir(tmp_path)
    marks = tmp_path / "marks"
    prov = ssh_hosts.provider(ssh_hosts.nodes(tmp_path)[:1])
    plan = {"h1": [16.0, 2.0], "again": 1.0}
    with taskflow.Runtime(providers=[prov], run_dir=str(tmp_path / "runs"), retries=0) as rt:
        futs, hosts = _start(2, plan, marks)
        assert hosts == ["h1", "h1"], hosts
        with ssh_hosts.flap(1, 6.0):
            got = wait_on(futs)
            (back,) = rt.recovery.comebacks.backs
        assert [n.alive for n in rt.nodes] == [False, True]
        assert wait_on(S.marked(2, plan, str(marks))) == 20      # h1 takes work again
    assert got == [0, 10]
    assert (back.held, back.running) == (1, 1)
    m = _marks(marks)
    assert sorted(i for what, i, _ in m if what == "end") == ["0", "1", "2"], m   # each once
    assert {h for _, _, h in m} == {"h1"}
    assert "node h1: its link failed; reaching it again for up to 600 s" in capfd.readouterr().err
    agents_gone(tmp_path / "wd-h1", 15)


def test_a_sole_host_that_never_comes_back_fails_the_run_after_the_grace(ssh_hosts, tmp_path,
                                                                         monkeypatch):
    """The only host's link stays cut: the run waits for it the agents' grace (8 s here),
    then its tasks fail naming the host and the grace (never a hang)."""
    monkeypatch.chdir(tmp_path)
    prov = ssh_hosts.provider(ssh_hosts.nodes(tmp_path)[:1])
    try:
        with taskflow.Runtime(providers=[prov], run_dir=str(tmp_path / "runs"), retries=0,
                              adopt_grace=8.0) as rt:
            futs = [S.slow_square(i, 30.0) for i in range(2)]
            _until(lambda: rt.nodes[0].used == 2, 20)
            ssh_hosts.cut(1)
            with pytest.raises(TaskError) as ei:
                wait_on(futs, timeout=60)
    finally:
        ssh_hosts.restart(1)
    assert "node h1 was not reached again within the agents' grace (8 s)" in str(ei.value)
    agents_gone(tmp_path / "wd-h1", 20)          # its agent's grace ran out there too
