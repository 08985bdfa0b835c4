"""A task that runs is shown as RUNNING (the node says when it starts), not only dispatched."""
from __future__ import annotations

import time

import taskflow
from taskflow import task, wait_on
from taskflow.journal import Journal


@task(returns=1)
def nap(s):
    time.sleep(s)
    return s


def test_a_long_task_is_running_at_the_master_and_in_the_journal(tmp_path):
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), echo_logs=False) as rt:
        f = nap(1.5)
        deadline = time.time() + 10
        while f._producer is not None and f._producer.state != "RUNNING" \
                and time.time() < deadline:
            time.sleep(0.02)
        assert f._producer.state == "RUNNING"
        rt.bus.flush()
        time.sleep(0.7)          # the journal holds new rows up to 0.5 s (writer.HOLD)
        rt.bus.flush()
        deadline = time.time() + 10
        state = None
        while time.time() < deadline:
            with Journal(rt.run_dir) as j:
                rows = j.tasks()
            state = rows[0]["state"] if rows else None
            if state == "RUNNING":
                break
            time.sleep(0.1)
        assert state == "RUNNING"
        assert wait_on(f) == 1.5
    with Journal(rt.run_dir) as j:
        (row,) = j.tasks()
    assert row["state"] == "DONE" and row["t_start"] and row["t_end"] - row["t_start"] >= 1.4
