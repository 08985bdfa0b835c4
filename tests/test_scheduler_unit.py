"""The master's scheduler on never-connected nodes: how much goes where, and in what order."""
from __future__ import annotations

from fakes import node, spec, state, task
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
    sp.stats_n, sp.stats_mean = 10, MASTER_SHORT / 10
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
    n1.samples.append({"t": 0, "cpu": 95.0, "cpu_own": 0.0})   # busy with outside work
    n2.samples.append({"t": 0, "cpu": 5.0, "cpu_own": 0.0})
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
