"""Bounded memory: values are freed without the cyclic garbage collector."""
from __future__ import annotations

import gc
import time

import psutil
import pytest

from taskflow import TaskGroup, wait_on, wait_on_file
from taskflow.future import Future
from taskflow.graph.task import Task
from taskflow.runtime.lineage import Record

import memory_tasks as MT

MB = 2**20


@pytest.fixture
def nogc():
    """The cyclic collector off for the test: what is freed is freed by reference counts."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _garbage_of_the_graph() -> list[str]:
    """What a cyclic collection finds unreachable among futures, tasks and lineage records."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        kinds = (Future, Task, Record)
        found = [repr(o) for o in gc.garbage if isinstance(o, kinds)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    return found


def test_no_reference_cycle_among_futures_tasks_and_records(rt, tmp_path, nogc):
    """Every kind of value and task, then ``del``: nothing is left for the cyclic GC."""
    big = 400 * 1024                            # over the inline limit: held on the node
    chain = MT.blob(big, 3)
    for i in range(4):
        chain = MT.grow(chain, i)               # held values, lineage records
    fan = [MT.checksum(chain) for _ in range(5)]
    lst: list[int] = []
    for i in range(3):
        MT.append_to(lst, i)                    # INOUT object versions
    out = str(tmp_path / "out.txt")
    MT.write_text(out, "hello")                 # a file version
    ignored = MT.fails(1)                       # a failure (IGNORE: value None)
    with TaskGroup("g"):
        grouped = [MT.checksum(MT.blob(big, 5)) for _ in range(3)]
    assert wait_on(fan) == [big + 4 * 1024 + 3 + 3] * 5
    assert wait_on(lst) == [0, 1, 2]
    wait_on_file(out)
    assert wait_on(ignored) is None
    assert wait_on(grouped) == [big + 10] * 3
    del chain, fan, lst, ignored, grouped
    rt.bus.flush()                              # the journal's rows made and delivered
    assert _garbage_of_the_graph() == []


def _rss(pid: int) -> int:
    return psutil.Process(pid).memory_info().rss


def _until(pred, timeout: float = 15.0) -> bool:
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def test_the_agent_frees_a_value_once_its_future_is_deleted(rt, nogc):
    """A 256 MB value held on the node goes at the next loop round after ``del``."""
    (node,) = rt.nodes
    agent = node.proc.pid
    v = MT.blob(256 * MB, 7)
    assert wait_on(MT.checksum(v)) == 256 * MB + 14
    held = _rss(agent)
    assert held > 256 * MB, "the value should be held by the agent"
    del v
    assert _until(lambda: _rss(agent) < held - 200 * MB), \
        f"agent RSS {_rss(agent) / MB:.0f} MiB, was {held / MB:.0f} MiB with the value"


def test_a_chain_of_large_values_is_freed_link_by_link(rt, nogc):
    """Each link of a chain is dropped once the next one is made (lineage keeps the calls,
    not the values): the agent never holds the whole chain."""
    (node,) = rt.nodes
    agent = node.proc.pid
    base = _rss(agent)
    v = MT.blob(64 * MB, 1)
    peak = 0
    for i in range(8):
        v = MT.grow(v, i)
        wait_on(MT.checksum(v))
        peak = max(peak, _rss(agent))
    assert wait_on(MT.checksum(v)) == 64 * MB + 8 * 1024 + 1 + 7
    # 8 links of 64 MB: all of them held would be 512 MB over the start
    assert peak - base < 300 * MB, f"agent grew by {(peak - base) / MB:.0f} MiB"


def test_a_chain_lost_with_its_node_is_made_again_from_its_records(rt4, nogc):
    """The links of a chain were freed as it ran; its node is lost: the last link is made
    again from the calls the lineage records kept (not from values they pinned)."""
    v = MT.blob(300 * 1024, 2)
    for i in range(5):
        v = MT.grow(v, i)
    assert wait_on(MT.checksum(v)) == 300 * 1024 + 5 * 1024 + 2 + 4
    (holder,) = v._holders
    node = next(n for n in rt4.nodes if n.name == holder)
    rec = v._lineage
    assert rec is not None
    inner = rec.refs[0][2]
    assert inner.ref() is None and inner.record is not None   # the input's future is gone
    node.provider.kill(node)
    assert _until(lambda: not node.alive)
    assert wait_on(MT.checksum(v)) == 300 * 1024 + 5 * 1024 + 2 + 4
    assert v._holders and holder not in v._holders
    assert rt4.n_retries >= 6           # the five links and the first value, made again
