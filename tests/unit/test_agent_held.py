"""Tasks held on a node for their inputs (agent.chained): every way a value comes into the
node's store releases the tasks waiting for it, and the check of held tasks is the net
under that rule: a held task whose inputs are all here never waits for ever."""
from __future__ import annotations

import selectors

from taskflow.agent.chained import Chaining
from taskflow.agent.holding import INLINE_MAX, Holding
from taskflow.agent.placement import Placement
from taskflow.agent.pool import Executor, Pool
from taskflow.agent.state import NodeState
from taskflow.agent.stops import Stops
from taskflow.agent.workqueue import WorkQueue
from taskflow.wire import messages as M

F = b"f" * 16


def _parts(executors: int = 1):
    st = NodeState()
    st.funcs[F] = b"payload"
    st.mean[F] = 1.0                    # long tasks: one per executor
    q = WorkQueue()
    pool = Pool(selectors.DefaultSelector(), [])
    for _ in range(executors):
        pool.execs.append(Executor(0, -1, -1))
    pl = Placement(st, q, pool)
    ch = Chaining(st, q, pl)
    pl.chaining = ch
    return st, q, pool, pl, ch


def _t(tid: int, reads: tuple[int, ...] = ()) -> M.TaskMsg:
    refs = [((i,), M.REF_VALUE, d) for i, d in enumerate(reads)] or None
    return M.TaskMsg(task_id=tid, digest=F, argv=(tid,), refs=refs, kwargs=None, nout=1,
                     inouts=None, options=None, priority=0, units=1, exclusive=False,
                     outputs=[1000 + tid])


def test_a_held_task_whose_inputs_came_unannounced_is_released_by_the_check():
    """A value put in the store by a way that did not release its waiters (a bug): the
    check of held tasks releases the task within a second, not never (the overdue check
    only gave up tasks whose values were *not* here, so such a task waited for ever)."""
    st, q, pool, pl, ch = _parts()
    pl.enqueue([_t(5, reads=(77, 78))])
    assert 5 in ch.blocked
    st.store[77] = b"a"
    st.store[78] = b"b"                 # (no unblock: the arrival was missed)
    results: list[M.ResultWire] = []
    stops = Stops(st, q, pool, pl, ch, {})
    stops.check_held(results, "n1")
    assert 5 not in ch.blocked and not ch.waiting_on
    assert [t.task_id for t in q.queued()] == [5] and results == []
    assert stops.held_next > 0          # looked at again in HELD_RECHECK while any is held


def test_a_cancelled_held_task_sent_again_waits_for_every_input_of_its_own():
    """CANCEL drops a held task; the master sends it again (its producer was placed
    again) under the same id: the first copy's place in the waiters' lists must not count
    for the second, which would then go with an input missing."""
    st, q, pool, pl, ch = _parts()
    pl.enqueue([_t(9, reads=(61, 62))])
    ch.drop({9})
    assert not ch.blocked and not ch.waiting_on
    pl.enqueue([_t(9, reads=(61, 62))])             # the same task, sent again
    st.store[61] = b"x"
    ch.unblock(61)
    assert 9 in ch.blocked and not q                # d62 is still to come
    st.store[62] = b"y"
    ch.unblock(62)
    assert [t.task_id for t in q.queued()] == [9]


def test_an_input_named_twice_is_waited_for_once():
    st, q, pool, pl, ch = _parts()
    pl.enqueue([_t(4, reads=(50, 50, 51))])
    st.store[50] = b"v"
    ch.unblock(50)
    assert 4 in ch.blocked                          # d51 is still to come
    st.store[51] = b"w"
    ch.unblock(51)
    assert [t.task_id for t in q.queued()] == [4]


def test_a_large_result_kept_here_releases_the_tasks_waiting_for_it():
    """A result too large to travel stays in the store (Holding.keep_large): that is a
    way into the store too, and releases the tasks waiting for it by itself."""
    st, q, pool, pl, ch = _parts(executors=2)
    pl.enqueue([_t(1), _t(2)])
    pl.schedule()                                   # d1001 and d1002 made on two executors
    pl.enqueue([_t(3, reads=(1001, 1002))])
    assert 3 in ch.blocked
    holding = Holding(st, q, ch, lambda op, body: None)
    big = b"z" * (INLINE_MAX + 1)
    for tid in (1, 2):
        res = holding.keep_large((tid, M.OK, [big], None, (0.0, 0.0)), _t(tid))
        assert res[2] == [M.Held(1000 + tid, len(big))]
    assert 3 not in ch.blocked and [t.task_id for t in q.queued()] == [3]


def test_a_cancelled_task_queued_on_a_dead_executor_is_not_placed_again():
    """A task cancelled while queued behind another on an executor is dropped when its
    result comes; if that executor dies first, the task must not go back on the queue
    (the master may send it again under its id: the result of that copy would be the one
    dropped, and the task would never end)."""
    st, q, pool, pl, ch = _parts()
    old, again = _t(8), _t(8)           # the copy cancelled, and one sent again
    cancelled = {8: old}
    stops = Stops(st, q, pool, pl, ch, cancelled)
    stops._requeue([_t(7), old, again])
    assert [t.task_id for t in q.queued()] == [7, 8] and not cancelled
    assert q.queued()[1] is again


def test_a_task_left_without_its_input_by_a_producer_sent_again_waits_for_it_here():
    """Task 1 is resent (an input of its own was taken on its executor: it goes again,
    maybe to another executor); task 2, queued right behind it for its value, then finds
    none on that executor. The value is being made here again: task 2 is held for it,
    not sent back to the master as MISSING (whose retry takes the chain back)."""
    st, q, pool, pl, ch = _parts()
    st.store[40] = b"in"
    holding = Holding(st, q, ch, lambda op, body: None)
    one, two = _t(1, reads=(40,)), _t(2, reads=(1001,))
    missing = M.ErrorInfo("InputMissing", "input is not on this executor", "", None)
    assert holding.resend((1, M.MISSING, None, missing, (0.0, 0.0)), one) is None
    assert holding.resend((2, M.MISSING, None, missing, (0.0, 0.0)), two) is None
    assert [t.task_id for t in q.queued()] == [1] and 2 in ch.blocked
    pl.schedule()                                   # task 1 placed: task 2 right behind it
    (ex,) = pool.execs
    assert [t.task_id for t in ex.queue] == [1, 2] and not ch.blocked
    three = _t(3, reads=(999,))                     # nothing here makes d999: the master
    back = holding.resend((3, M.MISSING, None, missing, (0.0, 0.0)), three)
    assert back is not None and back[1] == M.MISSING
