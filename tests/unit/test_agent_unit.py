"""The agent's placement and chaining as objects, with no process and no pipe.

Executors are records that are never connected; what placement decides is
read off their queues and batches (what would be written to them).
"""
from __future__ import annotations

import selectors

from taskflow.agent.chained import Chaining
from taskflow.agent.placement import Placement
from taskflow.agent.pool import Executor, Pool
from taskflow.agent.state import NodeState
from taskflow.agent.workqueue import WorkQueue
from taskflow.wire import messages as M
from taskflow.wire.invocation import Limits, Options
from taskflow.wire.thresholds import NODE_DEEP

F = b"f" * 16


def _parts(executors: int, mean: float | None = 0.0001):
    st = NodeState()
    st.funcs[F] = b"payload"
    if mean is not None:
        st.mean[F] = mean
    q = WorkQueue()
    pool = Pool(selectors.DefaultSelector(), [])
    for _ in range(executors):
        pool.execs.append(Executor(0, -1, -1))
    pl = Placement(st, q, pool)
    ch = Chaining(st, q, pl)
    pl.chaining = ch
    return st, q, pool, pl, ch


def _t(tid: int, *, reads: tuple[int, ...] = (), prio: int = 0, opts=None, units: int = 1,
       exclusive: bool = False) -> M.TaskMsg:
    refs = [((i,), M.REF_VALUE, d) for i, d in enumerate(reads)] or None
    return M.TaskMsg(task_id=tid, digest=F, argv=(tid,), refs=refs, kwargs=None, nout=1,
                     inouts=None, options=opts, priority=prio, units=units,
                     exclusive=exclusive, outputs=[1000 + tid])


def test_a_burst_becomes_one_run_split_evenly_up_to_the_depth():
    _, q, pool, pl, _ = _parts(2)
    pl.enqueue([_t(i) for i in range(100)])
    assert len(q) == 1                                # one queue entry for the run
    pl.schedule()
    assert [len(e.queue) for e in pool.execs] == [NODE_DEEP, NODE_DEEP]
    assert len(q.queued()) == 100 - 2 * NODE_DEEP
    # the function goes once to each executor, before its first batch
    assert all(F in e.digests for e in pool.execs)
    assert all(e.batch and e.out for e in pool.execs)
    assert pool.dirty == pool.execs


def test_priority_passes_the_queue_and_exclusive_tasks_wait_for_an_idle_executor():
    _, q, pool, pl, _ = _parts(2, mean=None)          # unknown: one task per idle executor
    pl.enqueue([_t(1), _t(2), _t(3, prio=5)])
    pl.schedule()
    assert [e.queue[0].task_id for e in pool.execs] == [3, 1]
    pl.enqueue([_t(4, exclusive=True, opts=Options(Limits(time_out=9.0)))])
    pl.schedule()
    assert [t.task_id for t in q.queued()] == [2, 4]  # nothing idle: both wait


def test_a_time_out_is_armed_when_the_task_is_queued():
    st, _, pool, pl, _ = _parts(1, mean=None)
    pl.enqueue([_t(7, exclusive=True, opts=Options(Limits(time_out=5.0)))])
    pl.schedule()
    deadline, ex = st.deadlines[7]
    assert ex is pool.execs[0] and deadline > 0


def test_a_consumer_of_a_value_made_here_goes_right_behind_its_producer():
    st, q, pool, pl, ch = _parts(2, mean=1.0)        # long tasks: no deep queues
    pl.enqueue([_t(1)])
    pl.schedule()
    producer = next(e for e in pool.execs if e.queue)
    assert st.producing[1001] is producer
    pl.enqueue([_t(2, reads=(1001,))])                # chained: its input is being made
    assert [t.task_id for t in producer.queue] == [1, 2] and not ch.blocked


def test_a_task_waiting_for_values_from_two_executors_is_held_then_released():
    st, q, pool, pl, ch = _parts(2, mean=1.0)
    pl.enqueue([_t(1), _t(2)])
    pl.schedule()
    pl.enqueue([_t(3, reads=(1001, 1002))])
    assert 3 in ch.blocked and not q
    ch.outputs_made([1001], [b"one"])
    assert 3 in ch.blocked                            # still one value missing
    ch.outputs_made([1002], [b"two"])
    assert 3 not in ch.blocked and [t.task_id for t in q.queued()] == [3]
    assert st.store[1001] == b"one" and st.store[1002] == b"two"


def test_values_pushed_by_the_master_release_held_tasks_and_travel_with_them():
    st, q, pool, pl, ch = _parts(1, mean=None)
    pl.enqueue([_t(5, reads=(77,))])
    assert 5 in ch.blocked
    st.store[77] = b"v"
    ch.unblock(77)
    pl.schedule()
    (ex,) = pool.execs
    assert [t.task_id for t in ex.queue] == [5] and ex.bdata == {77: b"v"}


def test_leaving_hands_back_the_queue_and_the_held_tasks():
    _, q, pool, pl, ch = _parts(2, mean=None)
    pl.enqueue([_t(1), _t(2), _t(3), _t(4, reads=(99,))])
    pl.schedule()
    back = [t.task_id for t in q.take_all()] + ch.take_all()
    assert back == [3, 4] and not q and not ch.blocked and not ch.waiting_on


def test_a_lone_executor_gets_the_next_long_task_behind_its_running_one():
    """One executor per node (the many-nodes case): nothing here could start the next
    task sooner, so it waits in the executor's pipe instead of for a LEAD wake-up."""
    for mean in (None, 5.0):
        _, q, pool, pl, _ = _parts(1, mean=mean)
        pl.enqueue([_t(1), _t(2), _t(3)])
        pl.schedule()
        (ex,) = pool.execs
        assert [t.task_id for t in ex.queue] == [1, 2]      # one behind, not more
        assert [t.task_id for t in q.queued()] == [3]
    _, q, pool, pl, _ = _parts(2, mean=5.0)                 # two: one each, the rest waits
    pl.enqueue([_t(1), _t(2), _t(3)])
    pl.schedule()
    assert [len(e.queue) for e in pool.execs] == [1, 1] and len(q.queued()) == 1


def test_cancelled_tasks_leave_the_queue_and_the_held_set():
    _, q, _, pl, ch = _parts(0)
    pl.enqueue([_t(i) for i in range(5)] + [_t(9, reads=(5,))])
    q.remove({1, 3})
    ch.drop({9})
    assert [t.task_id for t in q.queued()] == [0, 2, 4] and not ch.blocked


def test_a_task_held_for_a_value_nothing_here_makes_is_given_up_after_the_wait():
    st, q, pool, pl, ch = _parts(1, mean=1.0)
    pl.enqueue([_t(1)])
    pl.schedule()                                     # task 1 makes d1001 on the executor
    pl.enqueue([_t(2, reads=(1001, 555)), _t(3, reads=(777,))])
    assert set(ch.blocked) == {2, 3}
    assert ch.overdue(ch.oldest() + 1.0, wait=60.0) == []          # not yet
    late = ch.overdue(ch.oldest() + 61.0, wait=60.0)
    # task 3 waits for d777 that nothing here makes: given up, naming it; task 2 still
    # waits for d1001, which its executor is making
    assert [(t.task_id, lacking) for t, lacking in late] == [(3, [777])]
    assert set(ch.blocked) == {2} and 777 not in ch.waiting_on


def test_only_the_last_reader_on_an_executor_is_built_on_the_buffers_that_came():
    """Three tasks of one frame read one array: the first two get copies (the value stays
    for the third), the last takes the buffers themselves; a change made by a reader is
    seen by nobody else; a reader that finds nothing left is Missing (the agent resends)."""
    import numpy as np
    import pytest
    from taskflow.agent.executor import inputs
    from taskflow.wire import values as V
    payload = V.dump(np.arange(100_000, dtype=np.float64))
    came = [memoryview(b).tobytes() for b in payload.bufs]
    sent = M.Packed(payload.head, [bytearray(b) for b in came])     # as a frame brings it
    tasks = [(tid, F, (None,), [((0,), M.REF_VALUE, 7)], None, 1, None, None, 0, 1, False,
              [100 + tid]) for tid in (1, 2, 3)]
    data: dict[int, M.Payload] = {7: sent}
    inputs.AHEAD.frames, inputs.AHEAD.current = [], tasks
    got = []
    try:
        for t in tasks:
            inputs.AHEAD.task = t
            args = [None]
            inputs.resolve_refs(args, {}, t[3], data)
            (a,) = args
            got.append(a)
            shares = np.shares_memory(a, np.frombuffer(sent.bufs[0], dtype=np.uint8))
            assert shares == (t is tasks[-1]), f"task {t[0]}: shares={shares}"
            assert float(a[1]) == 1.0           # nobody before changed it
            a[:] = -1                           # this reader changes its own input
        assert 7 not in data                    # taken by the last reader
        with pytest.raises(inputs.Missing):
            inputs.resolve_refs([None], {}, tasks[0][3], data)
    finally:
        inputs.AHEAD.frames, inputs.AHEAD.current, inputs.AHEAD.task = [], None, None
    assert all(float(a[5]) == -1.0 for a in got)


def test_the_store_spills_the_oldest_large_values_and_reads_them_back(tmp_path):
    """Values in memory oldest first; spilling writes the oldest of 64 KiB or more to
    0600 files and frees their memory; a spilled value comes back whole (get), in slices
    of its flat layout (read_range, as copies to other nodes read it) and goes with pop."""
    import os
    import numpy as np
    from taskflow.agent.store import ValueStore, flat, unflat
    from taskflow.wire import values as V
    store = ValueStore(str(tmp_path / "spill"))
    arr = np.arange(50_000, dtype=np.float64)                  # 400 KB, out of band
    store[1] = V.dump(arr)
    store[2] = V.dump(b"b" * 200_000)
    store[3] = V.dump([1, 2, 3])                               # small: never spilled
    layout = b"".join(bytes(v) for v in flat(store[1]))
    size = len(store[1])
    assert store.spill(1) == [(1, size)]                       # the oldest large one only
    assert 1 in store and 1 not in store.mem and store.spilled > 0
    (name,) = os.listdir(tmp_path / "spill")
    assert os.stat(tmp_path / "spill" / name).st_mode & 0o777 == 0o600
    assert np.array_equal(V.load(store.get(1)), arr) and store.nreads == 1
    total, part = store.read_range(1, 10, 1000)
    assert total == len(layout) and bytes(part) == layout[10:1010]
    assert np.array_equal(V.load(unflat(bytearray(layout))), arr)
    assert [d for d, _ in store.spill(10**9)] == [2]           # 3 stays: too small
    assert V.load(store[2]) == b"b" * 200_000
    store.pop(1)
    store.pop(2)
    assert os.listdir(tmp_path / "spill") == [] and store.spilled == 0
    assert store.read_range(1, 0, 10) is None and V.load(store[3]) == [1, 2, 3]
def test_the_sampler_finds_its_own_process_tree_without_reading_every_process():
    """An agent's own CPU is that of its tree, read from /proc/<pid>/task/*/children
    (psutil's children() reads every process's stat: with 128 agents on one host that
    cost more CPU than the tasks)."""
    import os
    import subprocess
    import time

    import psutil

    from taskflow.agent import sampler
    proc = subprocess.Popen(["sh", "-c", "sleep 3 & sleep 3"])
    try:
        time.sleep(0.3)
        mine = sampler._descendants(os.getpid())
        if mine is None:            # a kernel without the children files: psutil is used
            return
        expected = {os.getpid()} | {p.pid for p in psutil.Process().children(recursive=True)}
        assert set(mine) == expected and proc.pid in mine and len(mine) >= 4
    finally:
        proc.kill()
        proc.wait()


def test_no_short_task_waits_behind_a_long_or_untimed_one_while_another_executor_can_take_it():
    st, q, pool, pl, _ = _parts(2)
    g = b"g" * 16                        # a function never timed on this node
    st.funcs[g] = b"payload"
    pl.enqueue([M.TaskMsg(task_id=1, digest=g, argv=(1,), refs=None, kwargs=None, nout=1,
                          inouts=None, options=None, priority=0, units=1, exclusive=False,
                          outputs=[1001])])
    pl.schedule()
    (busy,) = [e for e in pool.execs if e.queue]
    (other,) = [e for e in pool.execs if e is not busy]
    pl.enqueue([_t(i) for i in range(2, 102)])
    pl.schedule()
    assert [t.task_id for t in busy.queue] == [1]       # nothing waits behind it
    assert len(other.queue) == NODE_DEEP                # the other executor takes the run
    st.mean[g] = 5.0                                    # timed now, and long: the same
    other.queue.clear()
    pl.schedule()
    assert [t.task_id for t in busy.queue] == [1] and len(other.queue) == NODE_DEEP


def test_a_full_disk_error_naming_no_file_never_calls_a_roomy_disk_full(tmp_path, monkeypatch):
    """ENOSPC from a write names no file; when every folder the task writes has room (a
    quota, a disk none of them is on) the words say so instead of calling one full."""
    import errno

    from taskflow.agent.executor import diskroom
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(diskroom, "ROOMY", 0)       # (no disk here is smaller than that)
    text = diskroom.full_disk(OSError(errno.ENOSPC, "No space left on device"))
    assert text.startswith(f"no room where it wrote, though the disk holding {tmp_path} has ")
    assert diskroom.room(75.3e9) == "75.3 GB" and diskroom.room(0) == "0 B"
    named = OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "sub" / "f.bin"))
    assert f"the disk holding {tmp_path / 'sub'} " in diskroom.full_disk(named)
