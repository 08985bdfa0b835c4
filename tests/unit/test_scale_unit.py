"""What a master with many nodes must not do per node: look at each one per task, or send
every node a frame for a value one of them holds."""
from __future__ import annotations

import gc
import random
import time

import pytest

from support.fakes import Looks, counted_node, node, spec, state, task
from taskflow.future import Future
from taskflow.runtime.loop.remote_values import EVERY_NODE, RemoteValues
from taskflow.runtime.scheduling.scheduler import Scheduler


def _looks_per_task(make) -> dict[int, float]:
    out = {}
    for count in (4, 256):
        nodes = [make(i) for i in range(count)]
        st, _ = state(*nodes)
        if any(n.walltime_end is not None for n in nodes):
            st.scheduler.walltimes = True
        sp = spec()                       # unknown duration: one task at a time, no slices
        for _ in range(2 * count):
            task(sp, st=st)
        st.scheduler.assign()             # (the first round builds the heap: one look each)
        Looks.n = 0
        for n in nodes:                   # every node gives back one task
            n.used -= 1
            st.scheduler.freed(n)
        for _ in range(count):
            task(sp, st=st)
        got = st.scheduler.assign()
        assert len(got) == count
        out[count] = Looks.n / len(got)
    return out


def test_slurm_nodes_with_a_walltime_are_chosen_without_a_scan():
    def make(i):
        n = counted_node(f"n{i}")
        n.walltime_end = time.time() + 3600          # a Slurm job with --time
        n.drain_margin = 30.0
        return n
    looks = _looks_per_task(make)
    assert looks[256] <= looks[4] + 1.0, looks


def test_nodes_of_different_sizes_are_chosen_without_a_scan():
    looks = _looks_per_task(lambda i: counted_node(f"n{i}", slots=1 + i % 3,
                                               memory_gb=4.0 * (1 + i % 2)))
    assert looks[256] <= looks[4] + 1.0, looks


def test_a_learned_duration_no_job_can_give_is_tried_not_held_for_ever():
    """Calls that took 100 s before wait for a node whose job leaves them 100 s; if the run's
    jobs can never leave that much (pilots of 90 s), waiting would last for ever (a new pilot
    is no longer): the estimate is set aside and the call runs."""
    n = node("pilot-1", slots=1)
    n.walltime_end = time.time() + 80.0            # 50 s left before its drain point
    n.drain_margin = 30.0
    st, _ = state(n)
    sched = st.scheduler
    sched.walltimes = True
    sp = spec()
    learned = st.spec_runs[sp]
    learned.n, learned.mean = 3, 100.0
    sched.longest = 200.0                          # a fresh job could give it 200 s: wait
    task(sp, st=st)
    assert sched.assign() == []
    sched.longest = 90.0                           # no job ever could: it is tried
    (got,) = sched.assign()
    assert got[0] is n


def _scan_choice(sched: Scheduler, t, nodes):
    return sched._choose_scan(t, [n for n in nodes if n.usable], t.cus, 1)


def test_the_heap_chooses_what_the_scan_would_on_a_mixed_cluster():
    rng = random.Random(11)
    now = time.time()
    nodes = [node(f"n{i}", slots=1 + i % 4, memory_gb=2.0 + i % 3) for i in range(24)]
    for i, n in enumerate(nodes):
        if i % 5 == 0:        # some Slurm jobs end soon, one is past its drain point
            n.walltime_end = now + (5.0 if i else -1.0)
            n.drain_margin = 2.0
    st, _ = state(*nodes)
    sched = st.scheduler
    sched.walltimes = True
    sp = spec()
    learned = st.spec_runs[sp]
    learned.n, learned.mean = 5, 10.0           # ten-second calls: a job ending in 5 s is out
    for step in range(400):
        for n in nodes:
            if n.used and rng.random() < 0.3:
                n.used -= 1
                sched.freed(n)
        t = task(sp, st=st)
        if step % 7 == 0:
            t.excluded = {rng.choice(nodes).name}
        want = _scan_choice(sched, t, nodes)
        out = sched.assign()
        if want is None:
            assert not out or out[0][0].load == min(n.load for n in nodes if n.usable)
            sched.ready.replace([])
            for nd, tk in out:       # (a tie the scan broke otherwise: undo, go on)
                nd.used -= tk.cus
            continue
        ((chosen, _),) = out
        chosen.used -= 1
        assert chosen.load == want.load, (step, chosen, want)
        assert chosen.walltime_end is None or chosen.walltime_end - now > 12, chosen
        assert not (t.excluded and chosen.name in t.excluded and want.name not in t.excluded)
        chosen.used += 1


def test_a_node_past_its_drain_point_gets_nothing_and_costs_no_scan():
    nodes = [counted_node(f"n{i}") for i in range(64)]
    nodes[0].walltime_end = time.time() - 1.0        # its job is ending: SIGTERM is coming
    st, _ = state(*nodes)
    st.scheduler.walltimes = True
    sp = spec()
    for _ in range(63):
        task(sp, st=st)
    Looks.n = 0
    out = st.scheduler.assign()
    assert len(out) == 63 and all(n is not nodes[0] for n, _ in out)
    # building the heap looks at each node 3 times, then a few looks per task; a scan of
    # the 64 nodes per task would be over 4,000
    assert Looks.n < 64 * 3 + 63 * 4, Looks.n


def test_a_dead_value_is_dropped_on_the_nodes_that_got_it_only():
    rv = RemoteValues(lambda: None)
    held = Future(None, None, 1)
    held.left_on("n3")                 # a large result kept where it was made
    rv.watch(held)
    held.held_by("n7")                 # copied to another node for a task there
    rv.watch(held)
    chained = Future(None, None, 2)    # made on n5 for a task queued behind its producer
    rv.watch(chained, "n5")
    unknown = Future(None, None, 3)    # nobody said where: every node is asked
    rv.watch(unknown)
    del held, chained, unknown
    gc.collect()
    got = rv.take()
    assert {k: sorted(v) for k, v in got.items()} == {"n3": [1], "n7": [1], "n5": [2],
                                                      EVERY_NODE: [3]}
    assert len(rv) == 0 and rv.take() == {}


def test_a_holder_is_found_by_name_not_by_a_scan():
    nodes = [counted_node(f"n{i}") for i in range(300)]
    st, _ = state(*nodes)
    fut = Future(None, None, 5)
    fut.left_on("n250")
    st.scheduler.named("n0")           # the index is built once
    Looks.n = 0
    nodes[250].alive = True
    assert st.scheduler.holder(fut) is nodes[250]
    assert st.scheduler.holder(fut, nodes[250]) is None
    nodes[250].alive = False
    assert st.scheduler.holder(fut) is None
    assert Looks.n == 0


def test_a_big_task_group_keeps_its_tasks_in_flight_and_its_failures_not_all(rt):
    from taskflow import TaskGroup, barrier_group, task, wait_on
    from taskflow.errors import TaskError

    @task(returns=1)
    def ok(x):
        return x

    @task(returns=1)
    def bad(x):
        raise ValueError(f"bad {x}")

    got = []
    with TaskGroup("big", implicit_barrier=False):
        bad(7)
        for k in range(0, 16000, 2000):           # a program that waits as it goes
            got += wait_on([ok(i) for i in range(k, k + 2000)])
    assert got == list(range(16000))
    kept = rt.groups["big"]
    assert len(kept) < 4096 + 2000, len(kept)    # it forgot tasks that ended well
    with pytest.raises(TaskError, match="bad 7"):
        barrier_group("big")                      # the failure is still there


def test_a_journal_slower_than_the_tasks_holds_back_the_submitter_not_the_records(tmp_path):
    """Undelivered rows hold their tasks' records: past the bus's backlog limit the program
    waits for the journal instead of the master keeping every finished task."""
    import threading

    import taskflow
    from taskflow import task, wait_on
    from taskflow.providers.simulated import SimulatedProvider

    @task(returns=1)
    def echo(x):
        return x

    rt = taskflow.Runtime(providers=[SimulatedProvider(4)], run_dir=str(tmp_path),
                          echo_logs=False).start()
    try:
        rt.bus.backlog_limit = 2000
        seen: list[int] = []
        rt.bus.subscribe(lambda batch: time.sleep(0.05), rows=True)   # a slow observer
        stop = threading.Event()

        def watch():
            while not stop.is_set():
                seen.append(rt.bus.backlog())
                time.sleep(0.002)
        w = threading.Thread(target=watch, daemon=True)
        w.start()
        got = wait_on([echo(i) for i in range(30000)])
        stop.set()
        w.join(5)
    finally:
        rt.stop()
    assert got == list(range(30000))
    # the lists never held much more than the limit (plus what one delivery took)
    assert max(seen) < 2 * 2000 + 2 * 128, max(seen)


def test_a_burst_keeps_new_rows_back_until_their_task_ends_never_behind_its_events():
    from taskflow.events import Running
    from taskflow.runtime.bus import SUB_HOLD, _hold_back

    st, _ = state(node("n1"))
    sp = spec()
    old, fresh, ended, told, dep = (task(sp, st=st) for _ in range(5))
    old.t_submit = time.time() - 2 * SUB_HOLD       # (rows come in submission order)
    buf = [Running("running", time.time(), told.id, "f", "n1", None)]
    now, later = _hold_back([old, fresh, ended, told, (dep, [ended.id])], [ended], buf)
    assert later == [fresh, (dep, [ended.id])]       # new, not ended, nothing said of them
    assert now == [old, ended, told]                 # waited long enough; one row with its
    #                                                  end; before its event
