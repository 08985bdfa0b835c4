"""Bounded memory: values are freed without the cyclic garbage collector."""
from __future__ import annotations

import gc
import os
import time

import psutil
import pytest

import taskflow

from taskflow import TaskGroup, wait_on, wait_on_file
from taskflow.future import Future
from taskflow.graph.task import Task
from taskflow.runtime.rules.lineage import Record

from support import memory_tasks as MT
from support import tasks_lib as L
from support.agents import held_by

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
    held = held_by(agent)
    assert held > 256 * MB, "the value should be held by the agent"
    del v
    assert _until(lambda: held_by(agent) < held - 200 * MB), \
        f"agent holds {held_by(agent) / MB:.0f} MiB, was {held / MB:.0f} MiB with the value"


def test_a_chain_of_large_values_is_freed_link_by_link(rt, nogc):
    """Each link of a chain is dropped once the next one is made (lineage keeps the calls,
    not the values): the agent never holds the whole chain."""
    (node,) = rt.nodes
    agent = node.proc.pid
    base = held_by(agent)
    v = MT.blob(64 * MB, 1)
    peak = 0
    for i in range(8):
        v = MT.grow(v, i)
        wait_on(MT.checksum(v))
        peak = max(peak, held_by(agent))
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
    assert rt4.tally.retries >= 6           # the five links and the first value, made again


def test_consumers_start_while_producers_remain(tmp_path, monkeypatch):
    """``consume(produce(i))`` submitted in one loop on one slot: each consumer runs soon
    after its value exists, so few values are ever held (it used to be every producer
    first: all N values held at once)."""
    monkeypatch.chdir(tmp_path)
    n = 120
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs")):
        pairs = wait_on([MT.used_at(MT.made_at(i, MB)) for i in range(n)])
    events = sorted([(made, +1) for made, _ in pairs] + [(used, -1) for _, used in pairs])
    depth = held = 0
    for _, d in events:
        held += d
        depth = max(depth, held)
    first_use = min(used for _, used in pairs)
    last_made = max(made for made, _ in pairs)
    assert first_use < last_made, "every producer ran before the first consumer"
    assert depth <= n // 3, f"{depth} values made and not yet consumed at once (of {n})"


def test_priority_tasks_go_before_other_ready_tasks(tmp_path, monkeypatch):
    """As in PyCOMPSs: a priority=True task called last runs before the ready tasks
    called before it (one slot, so the order is the order they ran)."""
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs")):
        wait_on(MT.busy(0.01))
        blocker = MT.busy(0.5)
        normal = [MT.started(i) for i in range(12)]
        urgent = MT.started_first(0)
        wait_on(blocker)
        normal_t = wait_on(normal)
        urgent_t = wait_on(urgent)
    later = sum(1 for t in normal_t if t > urgent_t)
    # at most two normal tasks were already on the node with the blocker (prefetch)
    assert later >= len(normal) - 2, f"only {later} of {len(normal)} ran after the priority task"


def test_readers_of_one_large_value_never_see_each_others_changes(rt):
    """Readers of one held array queued together on the executors (one frame, one copy of
    the array from the agent): those that change their input in place change nobody
    else's; only the last reader may be built on the buffers that came."""
    wait_on([MT.zero_then_sum(MT.ones(10)), MT.total(MT.ones(10))] * 4)    # timed: short
    a = MT.ones(200_000)                        # 1.6 MB: held on the node
    assert wait_on(MT.total(a)) == 2e5
    got = wait_on([MT.zero_then_sum(a) if i % 2 == 0 else MT.total(a) for i in range(40)])
    assert got == [0.0, 2e5] * 20
    assert rt.tally.retries == 0


def test_a_chain_of_large_arrays_runs_without_retries(rt):
    """Each link reads the one before on the same executor (a value over 32 MB used to
    be trimmed from the executor before its chained reader ran: one failure per link)."""
    import numpy as np
    a = MT.ones(6_000_000)                    # 48 MB
    for _ in range(4):
        a = MT.grow_array(a)
    v = wait_on(a)
    assert v.shape == (6_000_000,) and float(v[0]) == 5.0 and np.all(v == 5.0)
    assert rt.tally.retries == 0


def _journal(rt):
    from taskflow.journal.reader import Journal
    rt.bus.flush()
    return Journal(rt.run_dir)


def test_values_spill_to_disk_above_the_budget_and_come_back_whole(tmp_path, monkeypatch):
    """A budget far below what the node uses: every held value goes to the node's disk as
    soon as it is kept, and is read back for the tasks, the main program and other
    values made from it; the journal and the report say how many and how much."""
    import numpy as np
    from taskflow.observe.report import figures, to_markdown
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"),
                          memory_budget="1MB") as rt:
        blobs = [MT.blob(300 * 1024, i) for i in range(6)]
        sums = [MT.checksum(b) for b in blobs]
        arr = MT.ones(100_000)                              # 800 KB, out of band
        grown = MT.grow_array(MT.grow_array(arr))
        assert wait_on(sums) == [300 * 1024 + 2 * (i % 256) for i in range(6)]
        assert wait_on(blobs[3]) == bytes([3]) * (300 * 1024)      # fetched from disk
        g = wait_on(grown)
        assert g.shape == (100_000,) and np.all(g == 3.0)
        (node,) = rt.nodes
        spill_dir = os.path.join(rt.data_dir, f"spill-{node.name}-{node.info['pid']}")
        assert _until(lambda: node.memory is not None and node.memory.spilled > 0)
        files = os.listdir(spill_dir)
        assert files and oct(os.stat(spill_dir).st_mode & 0o777) == "0o700"
        assert all(os.stat(os.path.join(spill_dir, f)).st_mode & 0o777 == 0o600 for f in files)
        del blobs, sums
        assert _until(lambda: len(os.listdir(spill_dir)) < len(files))    # dropped: file gone
        j = _journal(rt)
    rows = j.memory()
    assert sum(r["spills"] for r in rows) >= 6 and sum(r["reads"] for r in rows) >= 1
    f = figures(j)
    (mem,) = f["memory"]
    assert mem["spills"] >= 6 and mem["budget"] == 10**6
    assert "## Memory" in to_markdown(f)


def test_a_node_above_its_pause_mark_runs_consumers_and_one_producer_at_a_time(
        tmp_path, monkeypatch):
    """A pause mark below what the node uses keeps it paused for the whole run: it never
    takes a new producing task while another task runs there, yet the run completes and
    every value is right (a pause never stops a run)."""
    monkeypatch.chdir(tmp_path)
    n = 16
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"),
                          memory_pause="1MB") as rt:
        wait_on(MT.busy(0.01))
        (node,) = rt.nodes
        assert _until(lambda: node.paused)
        pairs = wait_on([MT.used_at(MT.made_at(i, 200 * 1024, 0.03)) for i in range(n)])
        j = _journal(rt)
    assert len(pairs) == n
    made = sorted(m for m, _ in pairs)
    # one producer at a time: each slept 30 ms after the one before had ended
    assert all(b - a >= 25_000 for a, b in zip(made, made[1:])), made
    assert any(r["paused"] for r in j.memory())
    assert figures_paused(j) >= 1


def figures_paused(j) -> int:
    from taskflow.observe.report import figures
    (mem,) = figures(j)["memory"]
    return mem["pauses"]


def test_memory_amounts_are_checked_where_they_are_given(tmp_path):
    from taskflow.errors import ClusterConfigError, UsageError
    from taskflow.providers.cluster import parse_cluster
    from taskflow.wire import budget
    with pytest.raises(UsageError, match="memory_budget must be a number of GB"):
        taskflow.Runtime(workers=1, memory_budget="lots")
    with pytest.raises(UsageError, match="above 0% and at most 100%"):
        taskflow.Runtime(workers=1, memory_pause="150%")
    with pytest.raises(ClusterConfigError, match=r"cluster.yml:3: nodes\[0\].memory_budget"):
        parse_cluster("nodes:\n  - local: true\n    memory_budget: 4 bananas\n", "cluster.yml")
    cfg = parse_cluster("memory_pause: 6\nnodes:\n  - local: true\n    memory_budget: 50%\n")
    assert cfg.memory_pause == 6 and cfg.nodes[0].memory_budget == "50%"
    assert budget.marks("50%", None, 8.0) == (4 * 2**30, int(4 * 2**30 * 4 / 3))
    assert budget.marks(None, None, 10.0)[0] == 6 * 2**30
    assert budget.marks(2, "3GiB", 8.0) == (2 * 10**9, 3 * 2**30)
    assert budget.marks(None, "1MB", 8.0) == (10**6, 10**6)     # a low pause mark alone
    assert budget.marks("2GB", "1GB", 8.0) == (2 * 10**9, 2 * 10**9)


@pytest.fixture
def rt_rlimit(tmp_path, monkeypatch):
    """A 2-slot runtime whose nodes may not use cgroups: memory limits fall back to
    RLIMIT_AS (test_harden_programs.py checks the kernel's limits)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TASKFLOW_NODE_CGROUPS", "off")
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")) as r:
        yield r


def test_a_task_past_its_memory_limit_is_stopped_with_its_limit_and_peak(rt_rlimit):
    """memory_limit=True without a cgroup: RLIMIT_AS on the executor while the task runs;
    an allocation past memory_size fails, the task ends with TaskMemoryExceeded (not
    retried: the same limit would stop it again), and the executor goes on with its old
    limit."""
    from taskflow.errors import TaskMemoryExceeded
    rt = rt_rlimit
    assert wait_on(MT.allocate_limited(50)) == 50 * 2**20          # within the limit
    with pytest.raises(TaskMemoryExceeded) as info:
        wait_on(MT.allocate_limited(1024))                           # 1 GiB > 0.25 GB
    err = info.value
    assert err.task_name.endswith("allocate_limited") and err.limit == 2**28
    assert 0 < err.peak < 2**28 + 200 * 2**20
    msg = str(err)
    assert "memory limit of 0.25 GB" in msg and "RLIMIT_AS" in msg and "peak" in msg
    assert "MemoryError" in err.remote_traceback
    assert rt.tally.retries == 0
    # the executor's own limit is back: the same process allocates freely again
    assert wait_on([MT.allocate_sized(300) for _ in range(2)]) == [300 * 2**20] * 2


def test_the_run_wide_memory_limit_applies_every_memory_size(tmp_path, monkeypatch):
    from taskflow.errors import TaskMemoryExceeded, UsageError
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TASKFLOW_NODE_CGROUPS", "off")
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs"), memory_limit=True):
        assert wait_on(MT.allocate_sized(20)) == 20 * 2**20
        with pytest.raises(TaskMemoryExceeded, match="memory limit of 0.25 GB"):
            wait_on(MT.allocate_sized(400))
        assert wait_on(MT.checksum(MT.blob(10, 1))) == 12            # no memory_size: no limit
    with pytest.raises(UsageError, match="memory_limit=True limits the task to its memory_size"):
        taskflow.constraint(memory_limit=True)(MT.checksum.__wrapped__)


def test_values_cross_between_nodes_in_parts_not_whole_through_the_master(tmp_path,
                                                                          monkeypatch):
    """Three 64 MiB values made on three nodes, read together on one: the two it lacks are
    streamed to it through the master in parts, whose memory grows by far less than one
    value (they used to be fetched whole, then kept there)."""
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=3, nodes=3, run_dir=str(tmp_path / "runs"),
                          echo_logs=False) as rt:
        vals = [MT.big_slow(i, 64) for i in range(1, 4)]
        taskflow.barrier()
        assert len({next(iter(f._holders)) for f in vals}) == 3, "one value per node"
        before = _rss(os.getpid())
        peak = [before]
        out = MT.heads(*vals)
        while not out.done():
            peak.append(_rss(os.getpid()))
            time.sleep(0.005)
        assert wait_on(out) == [(64 * 2**20, i, i) for i in range(1, 4)]
        assert max(len(f._holders) for f in vals) == 2       # copied to the reader's node
        assert all(f._payload is None for f in vals)          # none kept in the master
        assert not rt.failed
    assert max(peak) - before < 48 * MB, f"master grew by {(max(peak) - before) / MB:.0f} MiB"


def test_taskflow_run_takes_the_memory_options(tmp_path):
    """taskflow run --memory-budget/--memory-limit: a tiny budget spills (journal, report);
    the limit stops a task past its memory_size; a wrong amount is a usage error."""
    import subprocess
    import sys
    from taskflow.journal.reader import Journal
    script = tmp_path / "wf.py"
    script.write_text(
        "import numpy as np\nfrom taskflow import constraint, task, wait_on\n"
        "@task()\ndef big(n):\n    return np.ones(n)\n"
        "@task(returns=float)\ndef total(a):\n    return float(a.sum())\n"
        "@constraint(memory_size=0.05)\n@task(returns=int)\ndef hog(mb):\n"
        "    return int(np.ones(mb * 2**17).nbytes)\n"
        "print('sum', wait_on(total(big(200_000))))\n"
        "try:\n    wait_on(hog(400))\nexcept Exception as e:\n"
        "    print('stopped', type(e).__name__)\n")
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"))
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "-w", "1", "--memory-budget",
                        "1MB", "--memory-limit", str(script)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert "sum 200000.0" in r.stdout and "stopped TaskMemoryExceeded" in r.stdout, r.stderr
    (run_id,) = os.listdir(tmp_path / "runs")
    with Journal(str(tmp_path / "runs" / run_id)) as j:
        assert sum(m["spills"] for m in j.memory()) >= 1
    bad = subprocess.run([sys.executable, "-m", "taskflow", "run", "--memory-budget", "lots",
                          str(script)], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=60)
    assert bad.returncode == 2 and "memory_budget must be a number of GB" in bad.stderr


def test_wait_on_builds_the_value_on_the_bytes_that_came(rt):
    """A 64 MB array held on a node: wait_on brings it once; the program's array is built
    on the received buffer and the master keeps no second copy (the node serves it)."""
    import numpy as np
    a = MT.ones(8 * 2**20)                      # 64 MiB
    assert wait_on(MT.total(a)) == 8 * 2**20
    before = _rss(os.getpid())
    v = wait_on(a)
    grew = _rss(os.getpid()) - before
    assert v.flags.writeable and np.all(v[:10] == 1.0)
    assert a._payload is None and a._holders        # let go: the node still has it
    assert grew < 100 * MB, f"the master grew by {grew / MB:.0f} MiB for a 64 MiB value"
    v[:] = 2.0                                       # the program's own: nobody else sees it
    assert wait_on(MT.total(a)) == 8 * 2**20


def test_the_programs_own_cycles_are_collected_by_memory_growth(tmp_path, monkeypatch):
    """While a runtime runs the automatic collector is off (the runtime's objects need
    none); cycles the program makes are still collected, when the master's memory grew by
    half (and 128 MiB): 1.2 GiB of cyclic garbage never holds the master above ~300 MB
    more than it started with. The collector is back on after the run."""
    from taskflow.runtime import gctune
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(gctune, "CHECK", 0.0)      # look every loop round
    assert gc.isenabled()
    me = psutil.Process()
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs")):
        assert not gc.isenabled()
        base = me.memory_info().rss
        worst = 0
        for _ in range(40):                    # 40 x 32 MiB, each in a cycle of its own
            junk: list = [bytearray(32 * MB)]
            junk.append(junk)
            del junk
            assert wait_on(MT.checksum(b"x")) == 1 + 2 * ord("x")     # a loop round
            time.sleep(0.02)
            worst = max(worst, me.memory_info().rss - base)
        assert gctune.WATCH.collections >= 1
        assert worst < 300 * MB, f"the master grew by {worst / MB:.0f} MB"
    assert gc.isenabled()


CROSS = '''
import hashlib, sys
import taskflow
from taskflow import task, wait_on

@task()
def make(seed, n):
    return bytes([seed]) * n

@task()
def combine(a, b):
    import hashlib
    return hashlib.sha256(a + b).hexdigest()

if __name__ == "__main__":
    n = 8_000_000
    with taskflow.Runtime(workers=2, nodes=2, run_dir=sys.argv[1]):
        for _ in range(3):
            outs = [combine(make(2 * i, n), make(2 * i + 1, n)) for i in range(6)]
            want = [hashlib.sha256(bytes([2 * i]) * n + bytes([2 * i + 1]) * n).hexdigest()
                    for i in range(6)]
            assert wait_on(outs) == want
    print("ok")
'''


def test_large_values_cross_between_two_nodes_both_ways_without_a_hang(tmp_path):
    """Values of 8 MB made on two local nodes and combined across them: frames with large
    buffers go both ways at once. A loop that blocked in a read in the middle of such a
    frame, while its peer waited for the rest of one of its own, hung both (5 runs in 6
    before the loops' reads were made non-blocking)."""
    import subprocess
    import sys
    script = tmp_path / "cross.py"
    script.write_text(CROSS)
    try:
        r = subprocess.run([sys.executable, str(script), str(tmp_path / "runs")], cwd=tmp_path,
                           capture_output=True, text=True, timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail("the run hung: large values crossing between two nodes")
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr[-2000:]


def test_a_large_value_is_said_once_per_function(rt, monkeypatch, caplog):
    """Dask warns about large values; so does taskflow, naming the task, the size and the
    file-based way (the threshold, 256 MiB, lowered here to keep the test small)."""
    from taskflow.runtime.rules import outcomes
    monkeypatch.setattr(outcomes, "LARGE_VALUE", 2**20)
    with caplog.at_level("WARNING", logger="taskflow"):
        vals = [L.make_blob(3 * 2**20) for _ in range(3)]
        assert wait_on([L.blob_len(v) for v in vals]) == [3 * 2**20] * 3
    said = [r.getMessage() for r in caplog.records if "of values, kept on node" in r.getMessage()]
    assert len(said) == 1, said                      # once per function
    assert said[0].startswith("task make_blob (id ") and " made 3 MiB of values" in said[0]
    assert "write a file (FILE_OUT) and pass its path" in said[0]
