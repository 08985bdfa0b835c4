"""A call in a task that would write one of the parent's objects in place (INOUT, OUT,
... objects): the child could only write a copy, so the call is an error that says
so, where the parent made it (never the old value back as if it had been written)."""
from __future__ import annotations

import pytest

import taskflow
from taskflow import wait_on
from taskflow.errors import TaskError

from support import nested_writes as W


def test_a_parents_object_given_to_a_written_parameter_is_refused_at_the_call(tmp_path,
                                                                              monkeypatch):
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")):
        with pytest.raises(TaskError) as info:
            wait_on(W.gives_its_object())
        with pytest.raises(TaskError) as listed:
            wait_on(W.keeps_a_list([0]))
    msg = str(info.value)
    assert ("task increment was called inside a running task with parameter 'box' INOUT "
            "(a Box object)") in msg, msg
    assert "return the new value instead" in msg and "make the call in the main program" in msg
    assert "parameter 'items' INOUT (a list object)" in str(listed.value)
