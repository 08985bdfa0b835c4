"""A node agent that gets SIGTERM drains: its running tasks finish there, the rest moves.

This is what Slurm's walltime warning (``--signal``) and ``scancel --signal=TERM``
do to a pilot (tests/cluster/test_slurm.py checks that on the real Slurm); here the
agent is a local one and the signal comes from the test.
"""
from __future__ import annotations

import os
import signal

from support import tasks_lib as L
import taskflow
from taskflow import wait_on
from support.waiting import until as _until


def test_sigterm_drains_a_node(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    events: list = []
    with taskflow.Runtime(workers=8, nodes=2, run_dir=str(tmp_path / "runs"),
                          journal=False, echo_logs=False) as rt:
        rt.bus.subscribe(events.extend)
        victim = rt.nodes[0]
        vpid = victim.info["pid"]
        futs = [L.nap_marked(i, 0.6, str(marks)) for i in range(16)]
        _until(lambda: any(m.startswith(f"{vpid}.") for m in os.listdir(marks)), 30,
               "a task to start on the first node")
        started_there = {int(m.split(".")[1]) for m in os.listdir(marks)
                         if m.startswith(f"{vpid}.")}
        os.kill(vpid, signal.SIGTERM)
        out = wait_on(futs)
        _until(lambda: not victim.alive, 30, "the drained node to leave")
        # new work after the node left goes to the other node
        late = wait_on([L.nap_marked(100 + i, 0.0, str(marks)) for i in range(4)])
        assert not rt.failed
    assert [o[0] for o in out] == list(range(16))
    for i in started_there:       # running when the signal came: finished there, once
        assert out[i][1] == vpid
        assert len([m for m in os.listdir(marks) if m.split(".")[1] == str(i)]) == 1
    assert all(o[1] != vpid for o in late)
    kinds = [e[0] for e in events]
    assert "node_leaving" in kinds and "node_lost" not in kinds
    left = [e for e in events if e[0] == "node_left"]
    assert len(left) == 1 and left[0][4] == victim.name and "SIGTERM" in left[0][5]
    assert not [e for e in events if e[0] == "failed"]
    # nothing was killed or rerun: every task ran exactly once, where it reported from
    runs: dict = {}
    for m in os.listdir(marks):
        apid, i, _ = m.split(".")
        runs.setdefault(int(i), []).append(int(apid))
    assert all(len(v) == 1 for v in runs.values()) and len(runs) == 20
    assert all(runs[i] == [pid] for i, (_, pid) in enumerate(out))
    # the tasks it had not started were handed back (the master sends two per slot)
    back = [e for e in events if e[0] == "retry" and "handed back" in str(e[5])]
    assert back
    assert rt.tally.done == 20 and rt.tally.retries == 0
