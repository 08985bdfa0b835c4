"""How the node agent spreads short tasks over its executors.

Consecutive plain calls of one function reach the agent as one queue entry
(a run) that is split over the executors; these tests check the split on a
real agent object whose executors are pipe ends we read, and the sharing in
a real runtime.
"""
from __future__ import annotations

import collections
import os

import taskflow
from taskflow import task, wait_on
from taskflow.agent import agent as A
from taskflow.agent import placement
from taskflow.agent.pool import Executor
from taskflow.wire import messages as M
from taskflow.wire import protocol as P

DIGEST = b"f" * 16


def _agent(queue_lengths: list[int]) -> tuple[A.Agent, list]:
    r, w = os.pipe()
    ag = A.Agent(r, w)
    ag.state.funcs[DIGEST] = b"payload"
    ag.state.mean[DIGEST] = 0.0001            # a short function: queued deep
    ends = []
    for i, n in enumerate(queue_lengths):
        er, ew = os.pipe()
        os.set_blocking(ew, False)
        ex = Executor(0, ew, er)
        ex.digests.add(DIGEST)
        ex.queue = M.tasks([_msg(-1 - i * 1000 - k) for k in range(n)])
        ag.pool.execs.append(ex)
        ends.append(er)
    return ag, ends


def _msg(tid: int) -> M.TaskMsg:
    return M.TaskMsg(task_id=tid, digest=DIGEST, argv=(tid,), refs=None, kwargs=None, nout=1,
                     inouts=None, options=None, priority=0, units=1, exclusive=False,
                     outputs=[10**6 + tid])


def _enqueue(ag: A.Agent, msgs: list) -> None:
    """What the agent does with a TASKS frame from the master."""
    ag.placement.enqueue(M.tasks(msgs))


def _frames(fd: int) -> list:
    os.set_blocking(fd, False)
    try:
        return P.FrameReader(fd).feed() or []
    except BlockingIOError:      # nothing was written to it
        return []


def test_a_run_fills_the_shortest_queues_first_up_to_the_depth():
    depth = placement.DEEP
    ag, ends = _agent([depth - 2, 0, 3])
    _enqueue(ag, [_msg(i) for i in range(40)])
    assert len(ag.queue) == 1 and type(ag.queue.head()) is list    # one entry for the run
    ag.placement.schedule()
    ag.pool.send_batches()
    # water-filling: the empty queue rises to the short one, then both evenly; the
    # nearly full one gets nothing while the others are lower
    assert [len(e.queue) for e in ag.pool.execs] == [depth - 2, 22, 21]
    assert not ag.queue
    # each executor got its slice as one TASKS frame, in submission order
    sent = {}
    for i, (fd, ex) in enumerate(zip(ends, ag.pool.execs)):
        frames = [body for op, body in _frames(fd) if op == M.TASKS]
        sent[i] = [t.task_id for tasks, _ in frames for t in M.tasks(tasks)]
        assert len(frames) == (1 if sent[i] else 0)
        assert [t.task_id for t in ex.queue if t.task_id >= 0] == sent[i]
    assert sent[1] == list(range(22)) and sent[2] == list(range(22, 40)) and sent[0] == []

    # more than the room: the short queues end at the depth, the rest waits in the run;
    # a queue more than half full is left alone until it is down to half (so short
    # tasks travel in frames of at least depth / 2), then topped up to the depth
    ag, _ = _agent([depth - 2, 0, 3])
    _enqueue(ag, [_msg(i) for i in range(80)])
    ag.placement.schedule()
    assert [len(e.queue) for e in ag.pool.execs] == [depth - 2, depth, depth]
    assert [t.task_id for t in ag.queue.queued()] == list(range(2 * depth - 3, 80))
    del ag.pool.execs[0].queue[:depth // 2 - 3]          # not yet down to half
    ag.placement.schedule()
    assert [len(e.queue) for e in ag.pool.execs] == [depth // 2 + 1, depth, depth]
    del ag.pool.execs[0].queue[:1]                       # down to half
    ag.placement.schedule()
    assert [len(e.queue) for e in ag.pool.execs] == [depth] * 3
    assert [t.task_id for t in ag.queue.queued()] == list(range(2 * depth - 3 + depth // 2, 80))


def test_long_or_unknown_functions_go_to_idle_executors_only():
    ag, ends = _agent([0, 0, 5])
    del ag.state.mean[DIGEST]             # never ran here: one per idle executor
    _enqueue(ag, [_msg(i) for i in range(10)])
    ag.placement.schedule()
    assert [len(e.queue) for e in ag.pool.execs] == [1, 1, 5]
    assert len(ag.queue.head()) == 8
    assert [t.task_id for t in ag.queue.queued()] == list(range(2, 10))


@task(returns=1)
def _whose(i):
    return os.getpid()


def test_a_burst_of_short_calls_is_shared_by_every_executor(tmp_path):
    """Both executors take part in a burst (the regression guarded: one executor taking all
    of it). Warm-up until each has answered (on a loaded machine one may still be importing
    when the first 200 are done). The share is not asserted beyond taking part: run alone,
    the smaller share is 28-48% (as at 5001ce6: 29-42%; 39-44% in 6 runs on 2026-12-06),
    but late in a full pytest process it was 5% once and 0.9% (36 of 4,000) once: how the
    burst splits follows when each executor gets the CPU, which the test does not control."""
    with taskflow.Runtime(workers=2, journal=False, echo_logs=False,
                          run_dir=str(tmp_path / "runs")):
        seen: set[int] = set()
        for _ in range(50):             # the agent learns they are short; both executors run
            seen |= set(wait_on([_whose(i) for i in range(200)]))
            if len(seen) == 2:
                break
        assert len(seen) == 2, seen
        pids = wait_on([_whose(i) for i in range(4000)])
    counts = collections.Counter(pids)
    assert len(counts) == 2, counts


def test_a_long_tasks_successor_goes_to_its_executor_just_before_it_ends(monkeypatch):
    import time
    # a wide window, so a stalled test machine cannot move "now" out of it
    monkeypatch.setattr(placement, "LEAD", 0.5)
    ag, ends = _agent([1, 1, 1])
    ag.state.mean[DIGEST] = 5.0                  # long: no deep queues
    now = time.time()
    early, due, overdue = ag.pool.execs
    early.started = now - 2.0                    # 3 s to go
    due.started = now - 5.0 + 0.1                # ends within LEAD
    overdue.started = now - 20.0                 # far past its mean: nothing behind it
    _enqueue(ag, [_msg(i) for i in range(5)])
    ag.placement.schedule()
    assert [len(e.queue) for e in ag.pool.execs] == [1, 2, 1]
    assert [t.task_id for t in due.queue[1:]] == [0]
    assert [t.task_id for t in ag.queue.queued()] == [1, 2, 3, 4]
    # the loop wakes when the early one gets near its end, not at its next sample
    assert ag.placement.lead_at is not None
    assert abs(ag.placement.lead_at - (early.started + 5.0 - 0.5)) < 1e-6


def test_a_leaving_agent_does_not_wake_for_an_early_successor():
    """A drain places nothing, so a due successor time must not make the loop spin."""
    import time
    ag, _ = _agent([1])
    ag._sampler_at = time.time() + 10
    ag.placement.lead_at = time.time() - 1.0
    assert ag._timeout() == 0.0              # due: place it now
    ag.leaving = "SIGTERM"
    assert ag._timeout() > 1.0
