"""Objects a task gives to the tasks it calls, at parameters those write (INOUT, OUT ...):
each later call reads the version the one before wrote, and the task's wait_on brings
its object up to date, as in the program. A written collection cannot be followed so:
the call is an error that says so (never the old value back as if it had been written)."""
from __future__ import annotations

import pytest

import taskflow
from taskflow import wait_on
from taskflow.errors import TaskError

from support import nested_writes as W


def test_a_parents_objects_follow_the_calls_that_write_them(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")):
        assert wait_on(W.writes_its_objects()) == (2, 2, [0, 1])
        with pytest.raises(TaskError) as info:
            wait_on(W.gives_a_collection())
    msg = str(info.value)
    assert ("task double_all was called inside a running task with parameter 'items' "
            "COLLECTION_INOUT (a list)") in msg, msg
    assert "make the call in the main program" in msg
