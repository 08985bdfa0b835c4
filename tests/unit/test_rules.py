"""The outcome rules of the master (runtime.rules.outcomes), driven with a fake Comm.

No node process runs here: tasks are placed on never-connected node handles
and the rules' requests to the nodes are recorded by ``fakes.FakeComm``.
"""
from __future__ import annotations

import pickle

import pytest

from support.fakes import dispatch, event_waiter, node, spec, state, task, value
from taskflow.errors import NodeLost, TaskCancelled, TaskError, TaskTimeout
from taskflow.runtime.rules import outcomes
from taskflow.wire import messages as M

BOOM = M.ErrorInfo("ValueError", "boom", "Traceback: ...", None)


def _ended_well(st, t, n, v):
    cbs: list = []
    t.t_start, t.t_end = 1.0, 2.0
    n.inflight.pop(t.id, None)
    outcomes.task_done(st, t, [value(v)], n, cbs)
    return cbs


def test_a_value_releases_its_consumer_to_the_ready_queue():
    n = node("n1")
    st, _ = state(n)
    a = task(spec(), st=st)
    fut = a.outputs[0]
    b = task(spec(), fut, st=st)
    assert st.scheduler.tasks() == [a] and b.state == "SUBMITTED" and b.npending == 1
    st.scheduler.ready.pop()
    dispatch(a, n)
    _ended_well(st, a, n, 41)
    assert fut.done() and pickle.loads(fut._payload) == 41
    assert b.state == "READY" and st.scheduler.tasks() == [b]
    assert st.tally.done == 1 and st.tally.active == 1


def test_a_chained_consumer_already_on_the_node_gets_the_value_pushed():
    n = node("n1")
    st, comm = state(n)
    a = task(spec(), st=st)
    b = task(spec(), a.outputs[0], st=st)
    st.scheduler.ready.pop()
    dispatch(a, n)
    dispatch(b, n)                      # sent before its input exists (chained)
    did = a.outputs[0]._did
    _ended_well(st, a, n, 1)
    assert comm.pushed == [("n1", did)]


def test_a_value_left_on_its_node_is_watched_and_remembered_for_recompute():
    n = node("n1")
    st, comm = state(n)
    a = task(spec(), st=st)
    st.scheduler.ready.pop()
    dispatch(a, n)
    fut = a.outputs[0]
    outcomes.task_done(st, a, [M.Held(fut._did, 10**6)], n, [])
    assert a.outputs == ()              # the ended task does not pin the value on the node
    assert fut._holders == {"n1"} and fut._payload is None
    assert comm.watched == [fut._did]
    rec = fut._lineage
    assert rec is not None and rec.tid == a.id and rec.spec is a.spec
    assert rec.outs[0]() is fut          # the record holds its output weakly: no cycle


def test_retry_runs_again_elsewhere_then_fails_and_cancels_the_successors():
    n1, n2 = node("n1"), node("n2")
    st, _ = state(n1, n2, retries=1)
    a = task(spec(), st=st)
    b = task(spec(), a.outputs[0], st=st)
    st.scheduler.ready.pop()
    dispatch(a, n1)
    outcomes.task_failed(st, a, M.ERROR, BOOM, n1, [])
    assert a.state == "READY" and a.attempts == 1 and a.excluded == {"n1"}
    assert st.scheduler.tasks() == [a] and st.tally.retries == 1 and not st.failures
    st.scheduler.ready.pop()
    dispatch(a, n2)
    outcomes.task_failed(st, a, M.ERROR, BOOM, n2, [])
    assert a.state == "FAILED" and b.state == "CANCELLED"
    (err,) = st.failures
    assert isinstance(err, TaskError) and "failed on node n2 after 2 attempts" in str(err)
    assert "ValueError: boom" in str(err) and err.task_id == a.id
    with pytest.raises(TaskCancelled, match=f"because task .* \\(id {a.id}\\) failed"):
        b.outputs[0].result()
    assert st.tally.failed == 1 and st.tally.cancelled == 1 and st.tally.active == 0


def test_a_failure_names_the_command_that_shows_its_logs():
    n = node("n1")
    st, _ = state(n, retries=0)
    st.logs_hint = "taskflow logs RUN {task}"
    a = task(spec(), st=st)
    dispatch(a, n)
    outcomes.task_failed(st, a, M.TIMEOUT, BOOM, n, [])
    (err,) = st.failures
    assert isinstance(err, TaskTimeout) and f"logs: taskflow logs RUN {a.id}" in str(err)


def test_ignore_gives_none_and_lets_the_successors_run():
    n = node("n1")
    st, _ = state(n)
    a = task(spec(on_failure="IGNORE"), st=st)
    b = task(spec(), a.outputs[0], st=st)
    st.scheduler.ready.pop()
    dispatch(a, n)
    outcomes.task_failed(st, a, M.ERROR, BOOM, n, [])
    assert a.outputs[0].result() is None and not st.failures
    assert b.state == "READY" and st.scheduler.tasks() == [b]


def test_cancel_successors_gives_none_without_failing_the_run():
    n = node("n1")
    st, _ = state(n)
    a = task(spec(on_failure="CANCEL_SUCCESSORS"), st=st)
    b = task(spec(), a.outputs[0], st=st)
    st.scheduler.ready.pop()
    dispatch(a, n)
    outcomes.task_failed(st, a, M.ERROR, BOOM, n, [])
    assert b.state == "CANCELLED" and b.outputs[0].result() is None
    assert not st.failures and st.tally.cancelled == 1


def test_a_chained_consumer_is_taken_back_from_the_node_when_its_producer_reruns():
    n1, n2 = node("n1"), node("n2")
    st, comm = state(n1, n2)
    a = task(spec(), st=st)
    b = task(spec(), a.outputs[0], st=st)
    st.scheduler.ready.pop()
    dispatch(a, n1)
    dispatch(b, n1)
    outcomes.task_failed(st, a, M.ERROR, BOOM, n1, [])       # retried: b cannot stay
    assert comm.cancelled == [("n1", b.id)]
    assert b.state == "SUBMITTED" and b.node is None and b.id not in n1.inflight
    assert n1.used == 1      # b's unit is given back (a's, by the dispatcher with its result)


def test_a_lost_node_is_not_the_tasks_fault_and_the_last_one_fails_everything():
    n1, n2 = node("n1"), node("n2")
    st, comm = state(n1, n2, retries=0)
    a = task(spec(), st=st)
    st.scheduler.ready.pop()
    dispatch(a, n1)
    outcomes.node_lost(st, n1, "connection closed", [])
    assert a.state == "READY" and a.attempts == 0 and not st.failures   # runs elsewhere
    st.scheduler.ready.pop()
    dispatch(a, n2)
    ev = event_waiter()
    comm.fetches.append((999, ev))          # somebody waits for a value on a node
    outcomes.node_lost(st, n2, "host down", [])
    assert a.state == "FAILED" and ev.is_set() and st.dead
    assert any("no nodes left" in str(e) for e in st.failures)
    with pytest.raises(TaskError) as info:
        a.outputs[0].result()
    first = str(info.value).splitlines()[0]     # it never started: no "after 0 attempts"
    assert first.startswith(f"task {a.spec.name} (id {a.id}) failed on node n2: ") \
        and "attempt" not in first, first
    assert issubclass(NodeLost, Exception)


def test_task_errors_pickle_back_as_their_own_class():
    err = TaskTimeout("too slow", task_name="t", task_id=3, node="n1", kind="timeout")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is TaskTimeout and back.task_id == 3 and back.node == "n1"
    assert str(back) == "too slow"


def test_a_dead_worker_counts_against_the_crash_limit_not_the_retries():
    n1, n2 = node("n1"), node("n2")
    st, _ = state(n1, n2, retries=0)
    st.crash_limit = 2
    a = task(spec(on_failure="FAIL"), st=st)
    died = M.ErrorInfo("WorkerDied", "the executor process running the task died", "", None)
    for n in (n1, n2):
        st.scheduler.ready.pop()
        dispatch(a, n)
        outcomes.task_failed(st, a, M.CRASHED, died, n, [])
        assert a.state == "READY" and a.attempts == 0 and not st.failures   # retried anyway
    st.scheduler.ready.pop()
    dispatch(a, n1)
    a.state = "RUNNING"                            # started (the node said so), then lost
    outcomes.node_lost(st, n1, "host down", [])
    (err,) = st.failures
    assert a.state == "FAILED" and a.crashes == 3
    assert "worker died 3 times, the crash limit is 2" in str(err)


def test_a_running_task_on_the_last_lost_node_is_not_told_to_raise_the_crash_limit():
    """Its worker died once (the crash limit is 3): it fails because no node is left, and
    the error says so instead of advising --crash-limit. (Seen in benchmarks/chaos.py
    when the only local node agent was SIGKILLed.)"""
    n1 = node("n1")
    st, _ = state(n1, retries=0)
    st.crash_limit = 3
    a = task(spec(on_failure="FAIL"), st=st)
    st.scheduler.ready.pop()
    dispatch(a, n1)
    a.state = "RUNNING"
    outcomes.node_lost(st, n1, "its connection closed", [])
    assert a.state == "FAILED" and a.crashes == 1
    msg = str(a.error)
    assert "node n1 was lost" in msg and "no node left that could run it again" in msg
    assert "it was running there" in msg
    assert "crash-limit" not in msg and "crash limit" not in msg
    assert any("no nodes left" in str(e) for e in st.failures)


def test_a_task_lost_with_the_last_node_before_it_started_says_so_not_0_attempts():
    """Sent to the only node, not started there when the node is lost: it fails because no
    node is left, saying it had not started (it was "FAILED ... after 0 attempts")."""
    n1 = node("n1")
    st, _ = state(n1, retries=0)
    a = task(spec(on_failure="FAIL"), st=st)
    st.scheduler.ready.pop()
    dispatch(a, n1)                     # sent, not started
    outcomes.node_lost(st, n1, "its connection closed", [])
    assert a.state == "FAILED"
    msg = str(a.error)
    assert "node n1 was lost" in msg and "it had not started" in msg, msg
    assert "attempt" not in msg.split("\n")[0], msg


def test_the_last_node_lost_under_a_chain_ends_each_of_its_tasks_once():
    """A running task and its chained successor (sent before its input existed) are on
    the only node when it is lost: the first one's failure cancels the successor, which
    must not then fail a second time. Counted twice, the run's active count went below
    zero and `taskflow run` waited for it forever. (Found by benchmarks/chaos.py: the
    only local agent SIGKILLed while chains ran.)"""
    n1 = node("n1")
    st, _ = state(n1, retries=0)
    a = task(spec(), st=st)
    b = task(spec(), a.outputs[0], st=st)
    c = task(spec(), b.outputs[0], st=st)
    st.scheduler.ready.pop()
    dispatch(a, n1)
    a.state = "RUNNING"
    dispatch(b, n1)                     # chained: waits on the node for a's value
    outcomes.node_lost(st, n1, "its connection closed", [])
    assert (a.state, b.state, c.state) == ("FAILED", "CANCELLED", "CANCELLED")
    assert st.tally.failed == 1 and st.tally.cancelled == 2 and st.tally.active == 0


def test_a_task_the_interrupt_kept_from_starting_is_cancelled_not_interrupted():
    """Queued on an executor behind the task the interrupt stopped, it never ran: the
    journal says CANCELLED with no start time (INTERRUPTED is for what was running)."""
    n = node("n1")
    st, _ = state(n)
    a = task(spec(), st=st)
    b = task(spec(), a.outputs[0], st=st)
    st.scheduler.ready.pop()
    dispatch(a, n)
    dispatch(b, n)                      # chained behind it on the same executor
    st.interrupting = True
    stopped = M.ErrorInfo("Interrupted", "stopped by the run's interrupt while it ran", "",
                          None)
    a.t_start, a.t_end = 1.0, 2.0
    n.inflight.pop(a.id, None)
    outcomes.task_failed(st, a, M.INTERRUPTED, stopped, n, [])
    b.t_start, b.t_end = 3.0, 3.0         # (the node's clock when it reported it)
    n.inflight.pop(b.id, None)
    outcomes.task_failed(st, b, M.NOT_STARTED, M.ErrorInfo(
        "Interrupted", "not started: the run was interrupted", "", None), n, [])
    assert a.state == "INTERRUPTED" and a.t_start == 1.0
    assert b.state == "CANCELLED" and b.t_start == 0.0
    assert "never started: the run was interrupted" in str(b.error)
    assert st.tally.interrupted == 1 and st.tally.cancelled == 1 and st.tally.active == 0
