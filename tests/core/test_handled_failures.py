"""A task's error as Python users expect it: caught by its own type, and a failure the
script handled does not fail the run (one it never met still does)."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys

import pytest

from support import tasks_lib as L
from taskflow import TaskCancelled, TaskError
from taskflow.errors import with_cause
from taskflow.journal import Journal

CAUGHT = '''
from taskflow import task, wait_on

@task(returns=1)
def div(x):
    return 1 / x

@task(returns=1)
def plus(x):
    return x + 1

try:
    wait_on(div(0))
except ZeroDivisionError as e:
    print("caught", type(e).__name__, e.task_name)
try:
    wait_on(plus(div(0)))             # its successor: cancelled, caught by the same type
except ZeroDivisionError as e:
    print("caught", type(e).__name__)
print("value", wait_on(div(4)))
'''


def _run(tmp_path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "wf.py").write_text(script)
    return subprocess.run([sys.executable, "-m", "taskflow", *args, "--run-dir",
                           str(tmp_path / "runs"), "wf.py"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)


def test_a_failure_the_script_caught_ends_the_run_finished(tmp_path):
    r = _run(tmp_path, CAUGHT, "run", "-w", "2")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == ["caught TaskError(ZeroDivisionError) div",
                                     "caught TaskCancelled(ZeroDivisionError)", "value 0.25"]
    assert "2 failed (handled by the script)" in r.stderr and "FAILED" not in r.stderr
    (run_id,) = os.listdir(tmp_path / "runs")
    with Journal(str(tmp_path / "runs" / run_id)) as j:
        run = j.run()
    assert run["state"] == "finished"
    assert run["reason"] == "2 tasks failed (handled by the script)"
    st = subprocess.run([sys.executable, "-m", "taskflow", "status", run_id, "--run-dir",
                         str(tmp_path / "runs")], capture_output=True, text=True, timeout=60)
    assert st.returncode == 0
    assert st.stdout.startswith(f"run {run_id}: finished, 2 tasks failed (handled by the "
                                f"script)")
    runs = subprocess.run([sys.executable, "-m", "taskflow", "runs", "--run-dir",
                           str(tmp_path / "runs")], capture_output=True, text=True, timeout=60)
    assert "finished, failures handled" in runs.stdout


def test_under_pycompss_a_caught_failure_still_ends_the_app(tmp_path):
    """runcompss's rule: a failed task fails the application, caught or not."""
    r = _run(tmp_path, CAUGHT.replace("from taskflow import task, wait_on",
                                      "from pycompss.api.task import task\n"
                                      "from pycompss.api.api import compss_wait_on as wait_on"),
             "run", "--compat", "pycompss")
    assert r.returncode == 1
    assert "task div (id 1) FAILED" in r.stderr


def test_reading_exception_handles_it_and_an_unmet_failure_still_fails(rt):
    f = L.fail_now(1)
    assert isinstance(f.exception(), KeyError)      # read: the program met it
    assert not rt.failed
    L.fail_now(2)                                   # never looked at
    rt.wait_all()
    assert rt.failed and len(rt.unhandled()) == 1


def test_a_barrier_that_raises_hands_its_failures_to_the_program(rt):
    L.fail_now(1)
    with pytest.raises(KeyError):
        import taskflow
        taskflow.barrier()
    assert not rt.failed


class _OwnNew(Exception):
    def __new__(cls, a, b):             # a __new__ of its own: cannot be made as both
        return super().__new__(cls, a, b)


@pytest.mark.parametrize("cause,own", [
    (ZeroDivisionError("division by zero"), True),
    (KeyError("k"), True),
    (FileNotFoundError(2, "No such file", "/x"), True),
    (UnicodeDecodeError("utf-8", b"\xff", 0, 1, "invalid start byte"), True),
    (_OwnNew(1, 2), False),
    (KeyboardInterrupt(), False),        # not a task's failure to catch as an interrupt
])
def test_errors_made_of_both_classes(cause, own):
    err = with_cause(TaskError, "task f (id 3) failed on node n: boom", cause, task_name="f",
                     task_id=3, node="n")
    assert isinstance(err, TaskError) and err.__cause__ is cause
    assert isinstance(err, type(cause)) is own
    assert str(err) == "task f (id 3) failed on node n: boom" and err.task_name == "f"
    if own:
        assert type(err).__name__ == f"TaskError({type(cause).__name__})"
        assert err.args == cause.args
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is type(err) and str(again) == str(err) and again.task_id == 3
    cancelled = with_cause(TaskCancelled, "task g (id 4) was cancelled", cause)
    assert isinstance(cancelled, TaskCancelled) and isinstance(cancelled, type(cause)) is own
    if isinstance(cause, OSError):
        assert err.errno == 2 and err.filename == "/x"
