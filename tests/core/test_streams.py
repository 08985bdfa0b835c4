"""Streams between running tasks (taskflow.Stream, FileStream) on local nodes: real
agents and executors, the master keeping the stream (runtime/streams.py)."""
from __future__ import annotations

import os
import signal
import sqlite3

import pytest

import taskflow
from taskflow import wait_on
from taskflow.errors import NodeLost, TaskError, UsageError
from taskflow.wire.streams import StreamClosed

from support import stream_tasks as S
from support.waiting import until


def test_two_consumers_on_two_nodes_take_every_item_once_while_it_is_produced(
        tmp_path, monkeypatch):
    """One producer, two consumers on 2 nodes: each item reaches exactly one consumer, in
    the producer's order; a consumer took an item before the producer ended (it waits for
    that before publishing its last item); the journal has the stream, its tasks, its
    count and its close."""
    monkeypatch.chdir(tmp_path)
    marker = str(tmp_path / "first-item-taken")
    with taskflow.Runtime(workers=4, nodes=2, run_dir=str(tmp_path / "runs")) as rt:
        s = taskflow.Stream(alias="numbers")
        a, b = S.consume(s, marker), S.consume(s, marker)
        overlapped = S.produce_until_consumed(s, 2000, marker)
        got_a, got_b, overlapped = wait_on(a, b, overlapped)
    assert overlapped is True
    assert sorted(got_a + got_b) == list(range(2000))
    assert got_a == sorted(got_a) and got_b == sorted(got_b)
    db = sqlite3.connect(os.path.join(rt.run_dir, "journal.db"))
    (row,) = db.execute("SELECT kind, name, items, error, t_close FROM streams").fetchall()
    assert row[:4] == ("objects", "numbers", 2000, "") and row[4] is not None
    roles = sorted(db.execute("SELECT role, parameter FROM stream_tasks").fetchall())
    assert roles == [("consumer", "s"), ("consumer", "s"), ("producer", "s")]
    db.close()


def test_the_program_publishes_and_polls(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")) as rt:
        s = taskflow.Stream()
        c = S.consume(s)
        s.publish_list(range(5))
        s.publish({"k": 5})
        s.close()
        assert wait_on(c) == [0, 1, 2, 3, 4, {"k": 5}]
        back = taskflow.Stream()
        S.produce(back, 7)
        got = []
        while not back.is_closed():
            got += back.poll(timeout=5)
        assert got == list(range(7)) and back.poll() == []      # the last poll: nothing left
        with pytest.raises(StreamClosed, match="stop polling once is_closed"):
            back.poll()
        with pytest.raises(StreamClosed, match="publish after it was closed"):
            back.publish(8)
    db = sqlite3.connect(os.path.join(rt.run_dir, "journal.db"))
    rows = db.execute("SELECT s.items, t.role, t.task_id FROM stream_tasks t JOIN streams s "
                      "ON s.id = t.stream_id ORDER BY s.t_open, t.role").fetchall()
    db.close()
    assert [(n, role, tid == 0) for n, role, tid in rows] == [
        (6, "consumer", False), (6, "producer", True),      # the program published
        (7, "consumer", True), (7, "producer", False)]      # the program polled


def test_a_failed_producer_closes_its_stream_with_its_error(tmp_path, monkeypatch):
    """The consumer gets the 4 items published before the failure, then the error naming
    the producer task, its parameter and its error."""
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")):
        s = taskflow.Stream()
        c = S.consume_until_error(s)
        p = S.produce_then_fail(s, 4)
        got, kind, text = wait_on(c)
        with pytest.raises(TaskError):
            wait_on(p)
    assert got == [0, 1, 2, 3] and kind == "StreamFailed"
    assert "producer task produce_then_fail" in text and "parameter 's'" in text
    assert "the producer broke after 4 items" in text


def test_a_lost_node_closes_the_stream_its_producer_held_with_node_lost(tmp_path,
                                                                        monkeypatch):
    """The producer's node is killed after it published 3 items: the program, polling,
    gets those 3 and then NodeLost."""
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, nodes=2, run_dir=str(tmp_path / "runs")) as rt:
        s = taskflow.Stream()
        p = S.produce_then_hang(s, str(tmp_path / "first-attempt"))
        got = []
        while len(got) < 3:
            got += s.poll(timeout=30)
        with rt.lock:
            (home,) = [n for n in rt.nodes for t in n.inflight.values()
                       if t.spec.name == "produce_then_hang"]
        os.kill(home.proc.pid, signal.SIGKILL)
        with pytest.raises(NodeLost, match="held it open") as info:
            while not s.is_closed():
                got += s.poll(timeout=30)
        assert "3 item(s) it had were kept" in str(info.value)
        assert wait_on(p) == "ran again"
    assert got == [0, 1, 2]


def test_a_consumer_run_again_after_taking_items_fails_naming_them(tmp_path, monkeypatch):
    """A consumer's node is lost after it took 3 items: it runs again, and its poll fails
    saying the items it took cannot be given again (never a silent short result)."""
    monkeypatch.chdir(tmp_path)
    marker = tmp_path / "took-three"
    with taskflow.Runtime(workers=2, nodes=2, run_dir=str(tmp_path / "runs")) as rt:
        s = taskflow.Stream()
        c = S.take_then_hang(s, str(marker))
        s.publish_list([0, 1, 2])
        until(marker.exists, 60, "the consumer took three items")
        with rt.lock:
            (home,) = [n for n in rt.nodes for t in n.inflight.values()
                       if t.spec.name == "take_then_hang"]
        os.kill(home.proc.pid, signal.SIGKILL)
        with pytest.raises(TaskError, match=r"NodeLost: consumer task .*take_then_hang.*"
                                            r"parameter 's'.*runs again.*took 3 item"):
            wait_on(c)
        s.close()


def test_file_stream_between_tasks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")):
        fs = taskflow.FileStream(tmp_path / "parts")
        r = S.read_files(fs)
        S.write_files(fs, 5)
        assert wait_on(r) == [f"item {i}" for i in range(5)]


def test_bad_uses_name_the_task_the_parameter_and_the_fix(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")):
        with pytest.raises(UsageError, match=r"task .*plain, parameter 'x'.*declare the "
                                             r"parameter STREAM_IN"):
            S.plain(taskflow.Stream())
        with pytest.raises(UsageError, match=r"parameter 's' is STREAM_OUT but got a int: "
                                             r"pass a taskflow.Stream"):
            S.produce(5, 3)
        s = taskflow.Stream()
        S.produce(s, 2)
        with pytest.raises(TaskError, match=r"StreamClosed: .*parameter 's'.*polled again "
                                            r"after it was closed.*stop polling"):
            wait_on(S.poll_twice_after_close(s))
        with pytest.raises(TaskError, match=r"StreamClosed: .*parameter 's'.*publish after "
                                            r"close\(\).*publish everything before"):
            wait_on(S.publish_after_close(taskflow.Stream()))
        with pytest.raises(StreamClosed, match=r"task .*produce, parameter 's': .* is closed "
                                               r"already.*make a new stream"):
            S.produce(s, 1)
    with pytest.raises(UsageError, match="no run here"):
        taskflow.Stream().publish(1)


def test_a_resumed_run_runs_a_streams_producers_and_consumers_again(tmp_path, monkeypatch):
    """A run resumed from a finished one restores its plain task but runs the stream's
    producer and consumer again (the earlier items are not kept): the consumer gets every
    item again, never an empty stream closed by a producer restored without running."""
    monkeypatch.chdir(tmp_path)
    runs = str(tmp_path / "runs")

    def body():
        s = taskflow.Stream(alias="again")
        c = S.consume(s)
        S.produce(s, 5)
        return wait_on(S.plain(3)), wait_on(c)
    with taskflow.Runtime(workers=2, run_dir=runs, resumable=True) as first:
        assert body() == (3, [0, 1, 2, 3, 4])
    with taskflow.Runtime(workers=2, run_dir=runs, resume=first.run_dir) as second:
        assert body() == (3, [0, 1, 2, 3, 4])
    db = sqlite3.connect(os.path.join(second.run_dir, "journal.db"))
    restored = db.execute("SELECT t.name FROM transitions r JOIN tasks t ON t.id = r.task_id "
                          "WHERE r.state = 'RESTORED'").fetchall()
    db.close()
    assert restored == [("plain",)]
