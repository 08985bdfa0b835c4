"""What an agent keeps for its next master after losing one (agent/orphan.py), as a record.

The Orphan holds no reference to the agent: it is given what ran and what
came, and answers what the next master gets. These tests drive it alone; the
agents' processes, sockets and masters are in test_adopt.py and test_rejoin.py.
"""
from __future__ import annotations

from taskflow.agent.orphan import Orphan
from taskflow.agent.state import NodeState
from taskflow.agent.store import ValueStore
from taskflow.wire import messages as M

F = b"f" * 16


def _task(tid: int, outputs: list[int]) -> M.TaskMsg:
    return M.TaskMsg(task_id=tid, digest=F, argv=(tid,), refs=None, kwargs=None, nout=1,
                     inouts=None, options=None, priority=0, units=1, exclusive=False,
                     outputs=outputs)


def _ok(tid: int, outputs: list[M.Output]) -> M.ResultWire:
    return (tid, M.OK, outputs, None, (0.0, 1.0))


def test_kept_tasks_wait_for_a_claim_then_go_under_the_new_masters_ids():
    store = ValueStore()
    store[101] = b"large value"                  # task 1's output, held on the node
    orphan = Orphan(store)
    # the master is lost with tasks 1 and 2 on executors; task 7's result was sent just
    # before (it may never have arrived): offered again as a kept task that ended
    orphan.enter([_task(1, [101]), _task(2, [102])], [_ok(7, [b"seven"])])
    assert set(orphan.kept) == {1, 2, 7} and orphan.done == {7} and orphan.running() == 2
    assert orphan.waiting()

    # no master: this round's results and lines are held (other tasks' lines are not)
    assert orphan.sift([_ok(1, [M.Held(101, 11)])],
                       [(1, 0.5, "STDOUT", "one"), (2, 0.5, "STDOUT", "two runs"),
                        (9, 0.5, "STDOUT", "not kept")]) is None
    assert orphan.done == {1, 7} and len(orphan.held_logs) == 2

    # a master takes the agent: every kept task is listed, by key or by code and arguments
    listed = orphan.taken({2: b"key2"}, {F: b"code"}, {2})
    assert not orphan.waiting()
    assert sorted((a.task_id, a.key, a.code, a.done, a.started) for a in listed) == [
        (1, b"", b"code", True, True), (2, b"key2", b"code", False, True),
        (7, b"", b"", True, True)]
    assert orphan.outputs() == {101, 102}

    # it claims 1 and 2 under its own ids and cancels 7 (it has that result): nothing to kill
    assert orphan.adopt(M.Adopt([(1, 11, [111]), (2, 12, [112])], [7])) == set()
    # the next round: task 50 is the new master's own; task 1's held result goes under its
    # new id, its value renamed in the store; task 2's lines so far go under its new id
    out, lines = orphan.sift([_ok(50, [b"fifty"])], [])
    assert out == [_ok(50, [b"fifty"]), _ok(11, [M.Held(111, 11)])]
    assert (12, 0.5, "STDOUT", "two runs") in lines
    assert store.get(111) == b"large value" and 101 not in store
    assert not orphan.finished()
    # task 2 ends: reported under its new id at once; nothing is kept any more
    out, lines = orphan.sift([_ok(2, [b"two"])], [(2, 0.9, "STDOUT", "two ends")])
    assert out == [_ok(12, [b"two"])]
    assert lines == [(12, 0.9, "STDOUT", "two ends")]
    assert orphan.finished() and not orphan.held_logs


def test_a_running_task_the_master_cancels_is_to_be_killed_and_forgotten():
    orphan = Orphan(ValueStore())
    orphan.enter([_task(3, [103]), _task(4, [104])], [])
    orphan.taken({}, {}, set())
    assert orphan.adopt(M.Adopt([(4, 40, [140])], [3])) == {3}      # the agent kills it
    assert set(orphan.kept) == {4} and not orphan.finished()


def test_a_resumed_master_keeps_only_the_kept_tasks_keys_and_values():
    state = NodeState()
    state.store[102] = b"kept task's output"
    state.store[500] = b"pushed by the earlier master"
    state.keys.update({2: b"key2", 8: b"key8"})
    state.keep_only({2}, {102})
    assert list(state.store) == [102] and state.keys == {2: b"key2"}
    state.forget_keys([_ok(2, [b"x"])])         # reported: its key is not needed any more
    assert state.keys == {}


def test_an_adopted_tasks_last_lines_go_with_its_result_in_the_same_round():
    """A claimed task that prints and ends in one round: its lines go to the master (under
    its new id) with its result, none kept back (its claim is forgotten with the result)."""
    orphan = Orphan(ValueStore())
    orphan.enter([_task(5, [105])], [])
    orphan.taken({}, {}, set())
    orphan.adopt(M.Adopt([(5, 55, [155])], []))
    out, lines = orphan.sift([_ok(5, [b"five"])], [(5, 1.0, "STDOUT", "last words"),
                                                   (5, 1.1, "STDERR", "really last")])
    assert out == [_ok(55, [b"five"])]
    assert lines == [(55, 1.0, "STDOUT", "last words"), (55, 1.1, "STDERR", "really last")]
    assert orphan.finished() and not orphan.held_logs


def test_a_kept_task_queued_behind_the_running_one_is_listed_as_not_started():
    orphan = Orphan(ValueStore())
    # one executor's queue: task 1 runs, task 2 (chained on its output) waits behind it
    orphan.enter([_task(1, [101]), _task(2, [102])], [])
    listed = orphan.taken({}, {F: b"code"}, {1})
    assert sorted((a.task_id, a.started) for a in listed) == [(1, True), (2, False)]


def test_a_task_that_called_tasks_is_listed_with_no_key_so_it_is_not_claimed():
    """A new master has none of a parent's calls (nor a stream task's items): the task is
    listed with no key and no code, which the master cancels at once (it runs again)."""
    orphan = Orphan(ValueStore())
    orphan.enter([_task(1, [101]), _task(2, [102])], [])
    listed = orphan.taken({1: b"key1"}, {F: b"code"}, {1, 2}, callers={1})
    assert sorted((a.task_id, a.key, a.code, a.argv) for a in listed) == [
        (1, b"", b"", None), (2, b"", b"code", (2,))]
