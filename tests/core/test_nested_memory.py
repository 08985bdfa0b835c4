"""A parent's calls the master keeps: only those the parent can still ask for (issue 36:
10,000 children of one parent in bounded master memory)."""
from __future__ import annotations

import pytest

import taskflow
from taskflow import wait_on
from taskflow.errors import TaskError

from support import nested_tasks as N
from support.waiting import until


def test_the_master_keeps_only_the_calls_a_parent_still_holds(tmp_path, monkeypatch):
    """3,000 children waited for 100 at a time: when the parent has called them all, the
    master keeps the calls of about the last batch, not 3,000 values."""
    monkeypatch.chdir(tmp_path)
    gate = tmp_path / "gate"
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")) as rt:
        fut = N.in_batches(3000, 100, str(gate))

        def kept():
            with rt.lock:
                for node in rt.nodes:
                    for t in node.inflight.values():
                        if t.spec.name.endswith("in_batches") and t.nest is not None:
                            return t.nest
            return None

        # the parent's last call (after its 30 batches) was made: it is at its gate
        until(lambda: (rec := kept()) is not None and 3001 in rec.calls, 120,
              "the parent's last call")
        rec = kept()
        assert rec is not None and len(rec.calls) <= 2 * 100 + 1, len(rec.calls)
        gate.touch()
        assert wait_on(fut) == sum(i * i for i in range(3000))


def test_calls_whose_handles_were_dropped_are_still_waited_for_by_a_barrier(tmp_path,
                                                                            monkeypatch):
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")):
        with pytest.raises(TaskError, match="child 5 is broken"):
            wait_on(N.forgets_then_barrier(100))
