"""The master's scheduler on never-connected nodes: how much goes where, and in what order."""
from __future__ import annotations

from support.fakes import Looks, counted_node, node, spec, state, task
from taskflow.future import Future
from taskflow.wire.thresholds import MASTER_DEEP, MASTER_SHORT


def _ready(st, sp, k):
    return [task(sp, st=st) for _ in range(k)]


def test_unknown_functions_get_one_extra_task_per_slot():
    n = node("n1", slots=2)
    st, _ = state(n)
    _ready(st, spec(), 10)
    out = st.scheduler.assign()
    assert len(out) == 4 and n.used == 4          # 2 slots + 1 prefetched each
    assert len(st.scheduler) == 6


def test_short_functions_are_prefetched_deeply():
    n = node("n1", slots=2)
    st, _ = state(n)
    sp = spec()
    learned = st.spec_runs[sp]   # what the run learned of sp's calls so far
    learned.n, learned.mean = 10, MASTER_SHORT / 10
    _ready(st, sp, 2000)
    out = st.scheduler.assign()
    assert len(out) == 2 * (1 + MASTER_DEEP)


def test_higher_priority_goes_first_then_submission_order():
    n = node("n1", slots=1)
    st, _ = state(n)
    low = _ready(st, spec(), 3)
    high = _ready(st, spec(priority=True), 2)
    order = [t for _, t in st.scheduler.assign()]
    assert order == high                        # 1 slot + 1 extra: the two urgent ones
    order += [t for _, t in st.scheduler.assign()]
    assert order == high                        # full until results come back
    n.used = 0
    order += [t for _, t in st.scheduler.assign()]
    assert order == high + low[:2]


def test_locality_prefers_the_node_that_holds_an_input():
    n1, n2 = node("n1"), node("n2")
    st, _ = state(n1, n2)
    held = Future(None, None, 1)
    held._state = "FINISHED"
    held._holders = {"n2"}
    t = task(spec(), held, st=st)
    assert st.scheduler.assign() == [(n2, t)]


def test_least_loaded_reads_the_nodes_reported_cpu():
    n1, n2 = node("n1"), node("n2")
    st, _ = state(n1, n2)
    st.scheduler.placement = "least-loaded"
    n1.sample = {"t": 0, "cpu": 95.0, "cpu_own": 0.0}   # busy with outside work
    n2.sample = {"t": 0, "cpu": 5.0, "cpu_own": 0.0}
    t = task(spec(), st=st)
    assert st.scheduler.assign() == [(n2, t)]


def test_memory_is_a_hard_limit_per_node():
    n1, n2 = node("n1", memory_gb=4.0), node("n2", memory_gb=16.0)
    st, _ = state(n1, n2)
    sp = spec()
    sp.memory_size = 10.0
    big = task(sp, st=st)
    big.mem = 10.0
    assert st.scheduler.assign() == [(n2, big)]
    assert st.scheduler.fits_ever(1, 16.0) and not st.scheduler.fits_ever(1, 17.0)
    assert st.scheduler.capacity() == (2, 16.0)


def test_a_retried_task_avoids_the_node_it_failed_on():
    n1, n2 = node("n1"), node("n2")
    st, _ = state(n1, n2)
    t = task(spec(), st=st)
    t.excluded = {"n1"}
    assert st.scheduler.assign() == [(n2, t)]


def test_a_leaving_node_gets_nothing_new():
    n1, n2 = node("n1"), node("n2")
    st, _ = state(n1, n2)
    n1.leaving = "SIGTERM"
    _ready(st, spec(), 3)
    assert {nd.name for nd, _ in st.scheduler.assign()} == {"n2"}


# -- many nodes: the choice without a loop over the nodes (runtime/scheduling/nodeloads.py) --------------
def test_the_choice_of_a_node_does_not_look_at_every_node_per_task():
    """No per-task loop over the nodes: the looks per task stay flat from 4 to 256 nodes."""
    per_task = {}
    for count in (4, 256):
        nodes = [counted_node(f"n{i}") for i in range(count)]
        st, _ = state(*nodes)
        sp = spec()                       # unknown duration: one task at a time, no slices
        _ready(st, sp, 2 * count)
        Looks.n = 0
        out = st.scheduler.assign()
        assert len(out) == 2 * count      # 1 slot + 1 extra on every node
        per_task[count] = (Looks.n - 2 * count) / len(out)   # minus one rebuild
    assert per_task[256] <= per_task[4] + 1.0, per_task


def test_the_least_loaded_node_gets_the_next_task_as_a_scan_would_choose():
    import random
    rng = random.Random(7)
    nodes = [node(f"n{i}", slots=2) for i in range(16)]
    st, _ = state(*nodes)
    sched = st.scheduler
    sp = spec()
    for _ in range(300):
        for n in nodes:                  # loads move under the scheduler's feet
            if n.used and rng.random() < 0.3:
                n.used -= 1
                sched.freed(n)
        _ready(st, sp, 1)
        before = min(n.used for n in nodes)
        out = sched.assign()
        if not out:
            assert before >= 4            # every node full (2 slots + 2 prefetched)
            continue
        ((chosen, _),) = out
        assert chosen.used - 1 == before  # it was a least loaded node


def test_a_lost_or_leaving_node_gets_nothing_more():
    n1, n2, n3 = node("n1"), node("n2"), node("n3")
    st, _ = state(n1, n2, n3)
    sp = spec()
    _ready(st, sp, 3)
    st.scheduler.assign()
    n2.alive = False
    n3.leaving = "SIGTERM"
    _ready(st, sp, 6)
    out = st.scheduler.assign()
    assert {n.name for n, _ in out} == {"n1"} and len(out) == 3      # 2 slots + 2 extra - 1


def test_short_calls_go_to_several_nodes_in_slices_bounded_by_their_work():
    from taskflow.runtime.scheduling import scheduler as S
    nodes = [node(f"n{i}", slots=1) for i in range(8)]
    st, _ = state(*nodes)
    sp = spec()
    learned = st.spec_runs[sp]   # what the run learned of sp's calls so far
    learned.n, learned.mean = 100, 0.00005        # 50 us: a slice is the full SLICE
    _ready(st, sp, 8 * S.SLICE)
    out = st.scheduler.assign()
    per = {}
    for n, _ in out:
        per[n.name] = per.get(n.name, 0) + 1
    assert len(out) == 8 * S.SLICE and set(per.values()) == {S.SLICE}   # even, in slices
    # calls of ~1 ms: a slice holds SLICE_WORK of them, so a burst spreads out
    nodes = [node(f"m{i}", slots=1) for i in range(8)]
    st, _ = state(*nodes)
    sp = spec()
    learned = st.spec_runs[sp]   # what the run learned of sp's calls so far
    learned.n, learned.mean = 100, 0.001
    _ready(st, sp, 16)
    per = {}
    for n, _ in st.scheduler.assign():
        per[n.name] = per.get(n.name, 0) + 1
    assert len(per) == 8 and max(per.values()) <= int(S.SLICE_WORK / 0.001)


def test_slices_stop_at_a_call_that_reads_a_value_held_elsewhere():
    nodes = [node(f"n{i}", slots=1) for i in range(4)]
    st, _ = state(*nodes)
    sp = spec()
    learned = st.spec_runs[sp]   # what the run learned of sp's calls so far
    learned.n, learned.mean = 100, 0.00005
    held = Future(None, None, 99)
    held._state = "FINISHED"
    held._holders = {"n3"}
    first = _ready(st, sp, 5)
    reader = task(sp, held, st=st)
    out = st.scheduler.assign()
    where = {t.id: n.name for n, t in out}
    assert where[reader.id] == "n3"                   # its input's node, not the slice's
    assert len({where[t.id] for t in first}) == 1     # the plain ones: one slice


def test_idle_room_says_how_many_calls_fill_the_idle_nodes_without_a_scan():
    """The dispatcher's hint for a submitter's burst (Dispatcher.let_run): every slot while
    some node has nothing; 0 once every node has work or calls still wait; no look at
    every node per round."""
    nodes = [counted_node(f"n{i}") for i in range(256)]
    st, _ = state(*nodes)
    sched = st.scheduler
    sp = spec()
    _ready(st, sp, 100)
    sched.assign()                      # 100 of 256 one-slot nodes busy: 156 idle
    Looks.n = 0
    assert sched.idle_room() == 256
    assert Looks.n <= 16, Looks.n       # the least loaded node (O(log n)), not a scan
    _ready(st, sp, 1000)
    assert sched.idle_room() == 0       # calls wait: no burst to build
    sched.assign()                      # every node: 1 slot + 1 extra
    assert not any(n.used == 0 for n in nodes)
    assert sched.idle_room() == 0
    single, _ = state(node("solo", slots=4))
    assert single.scheduler.idle_room() == 0    # one node: no burst (the single path)
