"""How a running task's calls and waits travel (agent.executor.nested): held and sent
together, and still sent when the task computes on; the agent's and the master's record
of each executor stays true when parents wait and run again in one frame."""
from __future__ import annotations

import taskflow
from taskflow import wait_on

from support import nested_tasks as N


def test_a_call_starts_while_its_parent_computes_on_without_waiting(tmp_path, monkeypatch):
    """The parent calls a child and then only computes (no call, wait or output that would
    carry the call): the child runs on the other slot while the parent computes."""
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")):
        assert wait_on(N.calls_then_computes(str(tmp_path / "touched"), 120.0)) is True


def test_parents_in_one_frame_on_one_slot_wait_and_run_again_in_turn(tmp_path, monkeypatch):
    """30 parents sent together to one executor, each calling children and waiting, some
    twice: each one's return from its wait, its result and the next one's wait reach the
    agent in that order (one slot: every child runs on top of a waiting parent)."""
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs")) as rt:
        got = wait_on([N.fan_out(k, 3) for k in range(30)] + [N.fib(6) for _ in range(5)])
        assert got[:30] == [[(k * 100 + i) ** 2 for i in range(3)] for k in range(30)]
        assert got[30:] == [8] * 5
        with rt.lock:           # every lent slot came back
            assert all(node.used == 0 for node in rt.nodes), [n.used for n in rt.nodes]
