"""taskflow's own API for what the PyCOMPSs layer needed: GroupAbort, cancel_group,
stop(code), @workflow (nested runs), prolog/epilog hooks."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

import taskflow
from taskflow import GroupAbort, TaskCancelled, TaskGroup, task, wait_on


@task(returns=int)
def maybe_abort(x):
    time.sleep(0.2)
    if x == 2:
        raise GroupAbort(f"stop at {x}")
    return x


@task(returns=int)
def sleeper(x):
    time.sleep(30)
    return x


def test_group_abort_cancels_the_group_and_is_raised_at_its_exit(rt):
    t0 = time.time()
    with pytest.raises(GroupAbort, match="stop at 2") as info:
        with TaskGroup("g"):
            slow = sleeper(1)
            for i in range(4):
                maybe_abort(i)
    assert time.time() - t0 < 20                      # the running sleeper was killed
    assert "raised GroupAbort in task group 'g'" in str(info.value.task_error)
    with pytest.raises(TaskCancelled, match="GroupAbort in task group 'g'"):
        wait_on(slow)
    assert wait_on(maybe_abort(5)) == 5               # the program goes on
    assert not rt.failed                              # claimed at the barrier: no run failure
    assert rt.tally.retries == 0


def test_cancel_group_and_an_unclaimed_abort_fails_the_run(rt):
    with TaskGroup("c", implicit_barrier=False):
        futs = [sleeper(i) for i in range(3)]
    time.sleep(0.5)
    assert taskflow.cancel_group("c") == 3
    for f in futs:
        with pytest.raises(TaskCancelled):
            wait_on(f)
    with TaskGroup("never-waited", implicit_barrier=False):
        maybe_abort(2)
    taskflow.barrier()                                # does not raise the group's abort...
    assert rt.failed                                  # ...which still fails the run


@task(returns=int)
def mark_after(path, secs):
    with open(path + ".start", "w"):
        pass
    time.sleep(secs)
    with open(path + ".end", "w"):
        pass
    return 1


def test_cancelling_tasks_running_side_by_side_stops_every_one_of_them(rt, tmp_path):
    """Both slots of a node run a task of the group: cancelling it kills both executors
    (the agent replaced the first killed one in its list while walking it, and the second
    task ran to its end)."""
    paths = [str(tmp_path / f"t{i}") for i in range(2)]
    with TaskGroup("side", implicit_barrier=False):
        futs = [mark_after(p, 4.0) for p in paths]
    deadline = time.time() + 30
    while not all(os.path.exists(p + ".start") for p in paths):
        assert time.time() < deadline, "the two tasks did not start"
        time.sleep(0.05)
    assert taskflow.cancel_group("side") == 2
    for f in futs:
        with pytest.raises(TaskCancelled):
            wait_on(f)
    time.sleep(5.0)                                   # past their end, had they gone on
    assert [os.path.exists(p + ".end") for p in paths] == [False, False]
    assert wait_on([mark_after(str(tmp_path / f"after{i}"), 0.0) for i in range(2)]) == [1, 1]


def test_stop_with_a_code_cancels_everything(tmp_path):
    script = tmp_path / "stop.py"
    script.write_text("import taskflow, time\n"
                      "@taskflow.task(returns=int)\ndef s(x):\n    time.sleep(30)\n    return x\n"
                      "s(1); s(2); time.sleep(0.5)\ntaskflow.stop(code=5)\nprint('after')\n")
    t0 = time.time()
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "--workers", "2", str(script)],
                       cwd=str(tmp_path), capture_output=True, text=True, timeout=60)
    assert time.time() - t0 < 20
    assert r.returncode == 5 and "after" in r.stdout
    assert "2 cancelled" in r.stderr


def test_workflow_runs_a_script_as_one_task(rt, tmp_path):
    child = tmp_path / "child.py"
    child.write_text("import sys, taskflow\n@taskflow.task(returns=int)\ndef sq(x):\n"
                     "    return x * x\n"
                     "open(sys.argv[1], 'w').write(str(sum(taskflow.wait_on("
                     "[sq(i) for i in range(4)]))))\n")

    @taskflow.workflow(script=str(child), args="{{out}}")
    @task(returns=int)
    def nested(out):
        pass

    assert wait_on(nested(str(tmp_path / "out.txt"))) == 0
    assert (tmp_path / "out.txt").read_text() == "14"
    nested_runs = os.listdir(os.path.join(rt.run_dir, "nested"))
    assert nested_runs == [f"{rt.run_id}-t1"]
