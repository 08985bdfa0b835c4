"""Dependencies from parameters: RAW, WAR, WAW on objects and files, collections."""
from __future__ import annotations

import os
import time

import pytest

from support import tasks_lib as L
import taskflow
from taskflow import task, wait_on, wait_on_file
from taskflow.errors import UsageError


def test_futures_chain_and_tuple_returns(rt):
    a = L.inc(1)
    b = L.add(a, L.inc(a))
    q, r = L.divmod_task(b, 4)
    assert isinstance(a, taskflow.Future)
    assert wait_on(b) == 5
    assert wait_on([q, r]) == [1, 1]


def test_nested_wait_on_recurses_lists_tuples_dicts(rt):
    data = {"x": [L.inc(1), (L.inc(2), 7)], L.ident("k"): "plain"}
    out = wait_on(data)
    assert out == {"x": [2, (3, 7)], "k": "plain"}
    a, b = wait_on(L.inc(10), L.inc(20))
    assert (a, b) == (11, 21)


def test_futures_inside_plain_arguments_are_dependencies(rt):
    s = L.total([L.inc(i) for i in range(50)])
    assert wait_on(s) == sum(range(1, 51))


def test_in_argument_is_a_snapshot(rt):
    lst = [1, 2]
    fut = L.read_list(lst)
    lst.append(3)          # mutation after the call must not leak into the task
    assert wait_on(fut) == [1, 2]


def test_inout_object_versions_and_wait_on_updates_in_place(rt):
    lst = [0]
    for i in range(1, 6):
        L.append(lst, i)
    seen = L.read_list(lst)          # reads the version after five appends
    L.append(lst, 6)
    assert wait_on(seen) == [0, 1, 2, 3, 4, 5]
    out = wait_on(lst)
    assert out is lst and lst == [0, 1, 2, 3, 4, 5, 6]
    d = {}
    L.set_key(d, "a", 1)
    L.set_key(d, "b", 2)
    wait_on(d)
    assert d == {"a": 1, "b": 2}


def test_war_on_object_does_not_serialise(rt, tmp_path):
    """A reader of version 1 and the writer of version 2 run at the same time."""
    lst = [1]
    r = L.read_meeting(lst, "reader", "writer", str(tmp_path))
    w = L.append_meeting(lst, 2, "writer", "reader", str(tmp_path))
    assert wait_on(r) is True and wait_on(w) is True
    assert wait_on(lst) == [1, 2]


def test_raw_waw_war_on_files(rt, tmp_path):
    f = str(tmp_path / "data.txt")
    L.write_file(f, "one")
    first = L.read_file(f)
    L.write_file(f, "two")             # WAW + WAR: its own version
    second = L.read_file(f)
    L.append_file(f, "+more")
    third = L.read_file(f)
    assert wait_on([first, second, third]) == ["one", "two", "two+more"]
    wait_on_file(f)
    assert open(f).read() == "two+more"


def test_independent_file_writers_run_at_the_same_time(rt, tmp_path):
    f = str(tmp_path / "shared.txt")
    a = L.write_file_meeting(f, "A", "a", "b", str(tmp_path))
    b = L.write_file_meeting(f, "B", "b", "a", str(tmp_path))
    assert wait_on([a, b]) == [True, True]
    wait_on_file(f)
    assert open(f).read() == "B"     # the last writer in program order wins


def test_reader_of_original_file_and_writer_overlap(rt, tmp_path):
    f = tmp_path / "orig.txt"
    f.write_text("original")
    r = L.read_file_meeting(str(f), "r", "w", str(tmp_path))
    w = L.write_file_meeting(str(f), "new", "w", "r", str(tmp_path))
    assert wait_on(r) == "original|met" and wait_on(w) is True
    assert wait_on_file(str(f)) == str(f)
    assert f.read_text() == "new"


def test_file_written_by_task_is_at_user_path_after_barrier_and_end(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")):
        L.write_file("rel.txt", "relative")
        L.write_file(str(tmp_path / "b.txt"), "b1")
        taskflow.barrier()
        assert (tmp_path / "rel.txt").read_text() == "relative"
        L.write_file(str(tmp_path / "b.txt"), "b2")
    assert (tmp_path / "b.txt").read_text() == "b2"
    assert not (tmp_path / "runs" / "data").exists()


def test_directories(rt, tmp_path):
    d = str(tmp_path / "outdir")
    L.make_dir(d, 3)
    names = L.list_dir(d)
    assert wait_on(names) == ["part0.txt", "part1.txt", "part2.txt"]
    taskflow.wait_on_directory(d)
    assert sorted(os.listdir(d)) == ["part0.txt", "part1.txt", "part2.txt"]


def test_collections_in_inout_out_and_depth(rt):
    assert wait_on(L.sum_collection([L.inc(1), 5, L.inc(2)])) == 10
    assert wait_on(L.sum_nested([[L.inc(0), 2], [3, L.inc(3)]])) == 10
    items = [[1], [1, 2], []]
    L.bump_all(items)
    L.bump_all(items)
    wait_on(items)
    assert items == [[1, 1, 2], [1, 2, 2, 3], [0, 1]]
    outs = [[9], [9]]
    L.fill_all(outs)
    assert wait_on(outs) == [[0], [10]]


def test_a_written_collection_gives_back_what_the_task_put_in_its_elements(rt):
    """None, numbers and empty lists in a written collection: the task's assignments
    (items[i] = x) and appends come back, and a later reader gets them."""
    outs = [None, [], 7]
    L.assign_all(outs)
    assert wait_on(L.sum_nested(outs)) == 0 + 2 + 6      # read at the task's versions
    assert wait_on(outs) == [[0], [1, 1], [2, 2, 2]]
    nested = [[None, 1], []]                            # Depth 2: the leaves, and [] as one
    L.assign_nested(nested)
    assert wait_on(nested) == [["new", 1], [0]]
    with pytest.raises(UsageError, match=r"'items\[0\]' is OUT but is a NoneType inside a "
                                         r"tuple.*pass a list"):
        L.assign_all((None,))


def test_a_followed_list_inside_a_collection_is_read_at_its_newest_version(rt):
    lst = [1]
    L.append(lst, 5)                    # followed now: the task's version is the newest
    assert wait_on(L.sum_nested([lst, [2]])) == 8       # not the master's [1] (depth 2)


def test_out_object(rt):
    d = {"old": 1}
    L.fill_out(d)
    wait_on(d)
    assert d == {"filled": True}


def test_concurrent_accesses_do_not_order(rt, tmp_path):
    lst = []
    L.concurrent_touch(lst, "c1", "c2", str(tmp_path))
    L.concurrent_touch(lst, "c2", "c1", str(tmp_path))
    after = L.read_list(lst)           # a later reader waits for both
    assert wait_on(after) in (["c2"], ["c1"])
    assert os.path.exists(tmp_path / "c1") and os.path.exists(tmp_path / "c2")


def test_large_results_stay_on_node_and_are_fetched(rt):
    blob = L.make_blob(3 * 1024 * 1024)
    n = L.blob_len(blob)                  # same node: no transfer through the master
    assert wait_on(n) == 3 * 1024 * 1024
    assert blob._payload is None and blob._holders     # it stayed on the node
    assert len(wait_on(blob)) == 3 * 1024 * 1024       # fetched on demand


def test_many_large_values_through_one_slot(tmp_path, monkeypatch):
    """Large results queued deep on one executor must not deadlock agent and executor."""
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs")):
        wait_on(L.mib(0))                              # learn that mib is fast: deep queues
        blobs = [L.mib(i) for i in range(20)]
        sums = wait_on([L.sample_sum(b) for b in blobs])
    assert sums == [(i % 256) * 256 for i in range(20)]


@task(returns=1)
def big_value(n):
    return b"x" * n


@task(returns=1)
def length(b):
    return len(b)


def test_values_left_on_a_node_are_dropped_when_their_future_dies(tmp_path):
    # a 64 MiB result stays on the node (over the inline limit) and the next task reads
    # it there; once the caller lets go of the future, the node must free it (DROP), or a
    # long workflow passing large arrays along fills the nodes' memory
    import gc
    from support.agents import held_by
    n = 64 * 2**20
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs"), journal=False,
                          echo_logs=False) as rt:
        agent = rt.providers[0].procs[0].pid      # (its memory and its shared files)
        base = held_by(agent)
        f = big_value(n)
        assert wait_on(length(f)) == n
        held = held_by(agent)
        assert held - base > 0.75 * n, (base, held)       # the value is in the agent's store
        assert f._payload is None and f._holders          # and not at the master
        del f
        gc.collect()
        deadline = time.time() + 20
        while held_by(agent) > held - 0.75 * n and time.time() < deadline:
            time.sleep(0.1)
        assert held_by(agent) <= held - 0.75 * n, (base, held, held_by(agent))
        assert len(rt.dispatcher.remote) == 0


def test_a_future_for_a_collection_is_refused_naming_the_fixes(rt):
    with pytest.raises(UsageError, match=r"sum_collection, parameter 'items' is COLLECTION_IN "
                                         r"but got a Future.*wait_on\(\) it first, or declare"):
        L.sum_collection(L.inc(1))
