"""Exceptions, failure policies, retries, time-outs, lost nodes."""
from __future__ import annotations

import os

import pytest

from support import tasks_lib as L
import taskflow
from taskflow import TaskCancelled, TaskError, TaskTimeout, wait_on
from taskflow.journal import Journal


def test_exception_reaches_wait_on_with_remote_traceback(rt):
    good = L.fail_if(1, 2)
    bad = L.fail_if(2, 2)
    assert wait_on(good) == 1
    with pytest.raises(TaskError) as info:
        wait_on(bad)
    err = info.value
    assert err.task_name == "fail_if" and err.task_id > 0 and err.node == "local"
    assert "ValueError: bad value 2" in str(err)
    assert "Remote traceback" in str(err) and "tasks_lib.py" in err.remote_traceback
    assert isinstance(err.__cause__, ValueError)
    assert bad.exception() is err and bad.done()


def test_a_failing_task_runs_once_by_default(rt, tmp_path):
    """No retries unless asked (as Dask, Parsl, Nextflow, Snakemake): one run, one error."""
    marker = tmp_path / "m"
    marker.mkdir()
    with pytest.raises(TaskError) as info:
        wait_on(L.fail_counted(str(marker)))
    assert len(os.listdir(marker)) == 1 and rt.tally.retries == 0
    first = str(info.value).split("\n", 1)[0]
    assert "ValueError: attempt 0 fails" in first and "attempts" not in first
    assert wait_on(L.inc(1)) == 2
    rt.stop()
    with Journal(rt.run_dir) as j:
        t = {r["name"]: r for r in j.tasks()}
        assert (t["fail_counted"]["attempts"], t["inc"]["attempts"]) == (1, 1)  # 1: first run
        assert j.counts()["retries"] == 0


@pytest.mark.parametrize("n", [1, 3])
def test_retries_n_runs_a_failing_task_n_plus_1_times(tmp_path, monkeypatch, n):
    """--retries N / Runtime(retries=N): N + 1 runs; the summary's count and the journal's
    attempts agree."""
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "m"
    marker.mkdir()
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), retries=n) as rt:
        with pytest.raises(TaskError, match=f"after {n + 1} attempts"):
            wait_on(L.fail_counted(str(marker)))
    assert len(os.listdir(marker)) == n + 1 and rt.tally.retries == n
    with Journal(rt.run_dir) as j:
        (t,) = j.tasks()
        assert t["state"] == "FAILED" and t["attempts"] == n + 1
        assert j.counts()["retries"] == n


def test_retry_count_is_configurable_and_can_succeed(rt, tmp_path):
    marker = tmp_path / "m"
    marker.mkdir()
    assert wait_on(L.flaky(str(marker), 2)) == 2    # retries=2 on the task: third try works
    assert len(os.listdir(marker)) == 3


def test_fail_cancels_successors_keeps_unrelated_and_barrier_raises(rt):
    bad = L.fail_now(1)
    after = L.inc(bad)
    after2 = L.inc(after)
    unrelated = L.inc(100)
    assert wait_on(unrelated) == 101
    with pytest.raises(TaskCancelled) as info:
        wait_on(after2)
    assert "fail_now" in str(info.value) and "KeyError" in str(info.value)
    with pytest.raises(TaskError, match="fail_now"):
        taskflow.barrier()       # the root failure was not seen yet: the barrier raises it
    taskflow.barrier()           # reported once
    # the program met every failure and went on: they do not fail the run
    assert not rt.failed and len(rt.failures) == 1 and rt.tally.cancelled == 2
    assert rt.handled_note() == "1 task failed (handled by the script)"


def test_failure_seen_at_wait_on_is_not_raised_again_by_barrier(rt):
    with pytest.raises(TaskError):
        wait_on(L.fail_now(2))
    taskflow.barrier()


def test_ignore_gives_none_and_successors_run(rt):
    v = L.fail_ignored(1)
    after = L.none_or_value(v)
    assert wait_on(v) is None
    assert wait_on(after) == -1
    taskflow.barrier()
    assert not rt.failed


def test_cancel_successors_gives_none(rt):
    v = L.fail_cancel(1)
    after = L.inc(v)
    assert wait_on(v) is None and wait_on(after) is None
    later = L.inc(v)                    # called after the failure: cancelled too
    assert wait_on(later) is None
    taskflow.barrier()
    assert not rt.failed and rt.tally.cancelled == 2


def test_time_out_kills_the_task_and_the_slot_recovers(rt):
    slow = L.sleepy(30)
    with pytest.raises(TaskTimeout, match="time_out=1") as info:
        wait_on(slow)
    text = str(info.value).split("\n")[0]
    # one name for it, and what to do
    assert ": TaskTimeout: ran longer than time_out=1 s and was stopped; if it needs longer, " \
           "raise its time_out (@task(time_out=...) on sleepy)" in text
    assert "TimeoutError" not in str(info.value)
    assert wait_on(L.inc(1)) == 2       # the replaced executor works


def test_task_group_barrier_raises_its_failures(rt):
    with pytest.raises(TaskError, match="fail_now"):
        with taskflow.TaskGroup("g1"):
            L.inc(1)
            L.fail_now(5)
    with taskflow.TaskGroup("g2", implicit_barrier=False):
        x = L.inc(1)
    taskflow.barrier_group("g2")
    assert x.done() and wait_on(x) == 2


def test_lost_node_tasks_are_resubmitted_elsewhere(rt4, tmp_path):
    marker = str(tmp_path / "killed-once")
    v = L.kill_my_node(marker)
    others = [L.inc(i) for i in range(20)]
    assert wait_on(v) == 42
    assert wait_on(others) == list(range(1, 21))
    alive = [n for n in rt4.nodes if n.alive]
    assert len(alive) == 1 and os.path.exists(marker)
    lost = [n for n in rt4.nodes if not n.alive][0]
    assert lost.lost_reason


def test_worker_process_crash_is_a_task_failure(rt):
    with pytest.raises(TaskError, match="executor process running the task died"):
        wait_on(crash())


@taskflow.task(returns=int, on_failure="FAIL")
def crash():
    os._exit(3)


def test_chained_consumers_follow_a_retried_producer(rt, tmp_path):
    """Tasks sent to a node ahead of their input still get the retried value."""
    marker = tmp_path / "m"
    marker.mkdir()
    v = L.inc(0)
    for _ in range(20):
        v = L.inc(v)
    v = L.flaky_add(str(marker), v)
    for _ in range(20):
        v = L.inc(v)
    assert wait_on(v) == 21 + 100 + 20
    assert len(os.listdir(marker)) == 2


def test_a_call_reading_a_failure_that_already_ended_names_the_failed_task(rt):
    """The failed future has let go of its task by then: the cancellation still names it
    (not the cancelled call itself), and the journal row says so too."""
    bad = L.fail_if(2, 2)
    with pytest.raises(TaskError):
        wait_on(bad)
    later = L.inc(bad)
    with pytest.raises(TaskCancelled) as info:
        wait_on(later)
    first = str(info.value).split("\n", 1)[0]
    assert f"because task fail_if (id {bad.exception().task_id}) failed" in first, first
    rt.stop()
    with Journal(rt.run_dir) as j:
        (row,) = [t for t in j.tasks() if t["name"] == "inc"]
    assert f"because task fail_if (id {bad.exception().task_id}) failed" in row["error"]


def test_failure_in_a_chain_cancels_the_rest(rt):
    v = 0
    chain = []
    for _ in range(30):
        v = L.fail_on(v, 10)
        chain.append(v)
    assert wait_on(chain[9]) == 10
    with pytest.raises(TaskError, match="chain broken at 10"):
        wait_on(chain[10])
    with pytest.raises(TaskCancelled):
        wait_on(chain[-1])
    assert rt.tally.cancelled == 19
    assert wait_on(L.inc(1)) == 2
