"""Tasks that call tasks (nested submission) on local nodes: real executors and agents."""
from __future__ import annotations

import pytest

import taskflow
from taskflow import wait_on
from taskflow.errors import TaskError
from click.testing import CliRunner

from taskflow.cli import main
from taskflow.journal import Journal
from taskflow.observe.graph import graph_dot

from support import nested_tasks as N


def _run(tmp_path, monkeypatch, body, workers=2):
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=workers, run_dir=str(tmp_path / "runs")) as rt:
        out = body()
    return rt, out


def test_recursive_fibonacci_by_nested_tasks_on_two_slots(tmp_path, monkeypatch):
    """fib(12): 465 tasks, each parent waiting for two children, on 2 slots: no deadlock,
    the right value; the journal has every parent -> child edge."""
    rt, value = _run(tmp_path, monkeypatch, lambda: wait_on(N.fib(12)))
    assert value == 144
    with Journal(rt.run_dir) as j:
        edges = j.children()
        tasks = j.tasks()
        assert len(tasks) == 465 and all(t["state"] == "DONE" for t in tasks)
        assert len(edges) == 464                      # every task but the root is a child
        root = min(t["id"] for t in tasks)
        assert len(j.children(root)) == 2


def test_parents_waiting_for_children_hold_no_slot(tmp_path, monkeypatch):
    """4 parents x 10 children on 2 slots: the parents wait, the children still run."""
    rt, values = _run(tmp_path, monkeypatch,
                      lambda: wait_on([N.fan_out(k, 10, 0.01) for k in range(4)]))
    assert values == [[(k * 100 + i) ** 2 for i in range(10)] for k in range(4)]


def test_a_failed_child_raises_in_its_parent_with_its_name(tmp_path, monkeypatch):
    def body():
        with pytest.raises(TaskError) as info:
            wait_on(N.waits_for_a_failing_child())
        return str(info.value), wait_on(N.catches_its_child())
    rt, (failed, caught) = _run(tmp_path, monkeypatch, body)
    assert "task fails" in failed and "child 7 is broken" in failed, failed
    # (the child's error is also its ValueError: the parent may catch it by its type)
    assert caught.startswith("TaskError(ValueError): task fails") and "child 1 is broken" in caught


def test_a_failed_parent_cancels_its_unfinished_children(tmp_path, monkeypatch):
    """The parent called three 30 s children and failed: they are cancelled (the run ends
    long before 30 s), with the reason."""
    def body():
        with pytest.raises(TaskError, match="the parent gives up"):
            wait_on(N.calls_then_fails())
    rt, _ = _run(tmp_path, monkeypatch, body)
    with Journal(rt.run_dir) as j:
        kids = [t for t in j.tasks() if t["name"] == "sleeper"]
        assert len(kids) == 3 and all(t["state"] == "CANCELLED" for t in kids), kids
        assert all("its parent task calls_then_fails" in (t["error"] or "") for t in kids)


def test_a_chain_of_calls_inside_one_task_and_what_status_and_graph_show(tmp_path,
                                                                         monkeypatch):
    rt, value = _run(tmp_path, monkeypatch, lambda: wait_on(N.chain_in_a_task(50)))
    assert value == 50
    r = CliRunner().invoke(main, ["status", rt.run_id, "--run-dir", str(tmp_path / "runs")])
    assert "nested: 50 task(s) called by 1 running task(s)" in r.output, r.output
    with Journal(rt.run_dir) as j:
        kind, dot, _ = graph_dot(j, "tasks")
    assert dot.count("style=dashed") == 50       # parent -> child, drawn dashed


def test_a_call_from_a_thread_the_task_started_is_a_clear_error(tmp_path, monkeypatch):
    rt, said = _run(tmp_path, monkeypatch, lambda: wait_on(N.calls_from_a_thread()))
    assert said.startswith("UsageError: task square was called from a thread that task")
    assert "from its own thread only" in said


def test_a_parent_whose_node_is_lost_runs_again_and_its_children_are_cancelled(tmp_path,
                                                                              monkeypatch):
    import os
    import signal

    from support.waiting import until
    monkeypatch.chdir(tmp_path)
    marker = str(tmp_path / "marker")
    with taskflow.Runtime(workers=4, nodes=2, run_dir=str(tmp_path / "runs")) as rt:
        fut = N.calls_sleepers_once(marker)
        def placed(name):
            with rt.lock:
                return [n for n in rt.nodes for t in n.inflight.values() if t.spec.name == name]
        until(lambda: len(placed("sleeper")) == 2, 60, "the two children placed")
        (home,) = placed("calls_sleepers_once")
        os.kill(home.proc.pid, signal.SIGKILL)
        assert wait_on(fut) == "ran again"
    with Journal(rt.run_dir) as j:
        kids = [t for t in j.tasks() if t["name"] == "sleeper"]
    assert len(kids) == 2 and all(t["state"] == "CANCELLED" for t in kids), kids
    # the reason names the parent and its lost node
    assert all("its parent task calls_sleepers_once" in (t["error"] or "") and
               "runs again" in t["error"] and "lost" in t["error"] for t in kids), kids


def test_the_end_of_a_run_waits_for_a_child_its_parent_left_running(tmp_path, monkeypatch):
    """A parent returns at once after its call: the call and the result reach the master
    together, and the program's barrier (and the run's end) waited for the running tasks
    only, not for the call still being made: the child never ran, and the journal said
    the run finished with it SUBMITTED."""
    def body():
        for i in range(5):
            assert wait_on(N.leaves_a_child(str(tmp_path / f"out{i}"), f"t{i}")) == f"t{i}"
            taskflow.barrier()
            assert (tmp_path / f"out{i}").read_text() == f"t{i}"
        return wait_on(N.leaves_a_child(str(tmp_path / "last"), "end"))
    rt, _ = _run(tmp_path, monkeypatch, body)
    assert (tmp_path / "last").read_text() == "end"     # (the run's end waited for it too)
    with Journal(rt.run_dir) as j:
        tasks = j.tasks()
        assert len(tasks) == 12 and all(t["state"] == "DONE" for t in tasks), tasks
        assert len(j.children()) == 6


def test_a_parent_reads_a_file_its_children_wrote_after_wait_on_file(tmp_path, monkeypatch):
    """On one slot: the children run only because the waiting parent lends it."""
    path = str(tmp_path / "out.txt")
    rt, (first, second) = _run(tmp_path, monkeypatch,
                               lambda: wait_on(N.reads_what_its_children_wrote(path)),
                               workers=1)
    assert first == "one\ntwo\n" and second == "one\ntwo\nthree\n"
    rt, said = _run(tmp_path, monkeypatch, lambda: wait_on(
        N.waits_for_a_file_nobody_writes(str(tmp_path / "nobody.txt"))))
    assert said.startswith("UsageError: task ") and "nobody.txt" in said, said
    assert "no task reads or writes" in said
