"""Streams between running tasks (taskflow.Stream, FileStream) on local nodes: real
agents and executors, the master keeping the stream (runtime/streams.py)."""
from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap

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


def test_a_handle_used_by_an_earlier_run_of_the_process_is_not_another_stream(tmp_path,
                                                                             monkeypatch):
    """The program's streams without an alias are numbered by each run (for a resumed
    run to find them): a handle an earlier run numbered is numbered again by the next, so
    it never becomes the stream that run numbered the same."""
    monkeypatch.chdir(tmp_path)
    s = taskflow.Stream()
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs")):
        s.publish("s")
        assert s.poll(timeout=0) == ["s"]
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs")):
        t = taskflow.Stream()
        t.publish("t")
        assert s.poll(timeout=0) == [] and t.poll(timeout=0) == ["t"]
        assert s.name == "Stream#2" and t.name == "Stream#1"


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


def _restored(run_dir: str) -> list[str]:
    """The names of the tasks run ``run_dir`` restored from its earlier run, sorted."""
    with sqlite3.connect(os.path.join(run_dir, "journal.db")) as db:
        return sorted(n for (n,) in db.execute(
            "SELECT t.name FROM transitions r JOIN tasks t ON t.id = r.task_id "
            "WHERE r.state = 'RESTORED'"))


def _file_stream_run(tmp_path, produce, workers: int = 2, **kw) -> tuple[str, list[str]]:
    """A run (``kw``: resumable, resume) whose one consumer reads the FileStream
    ``tmp_path/parts`` while ``produce(fs)`` calls its producers: (its run directory, what
    the consumer read, sorted)."""
    with taskflow.Runtime(workers=workers, run_dir=str(tmp_path / "runs"), **kw) as rt:
        fs = taskflow.FileStream(tmp_path / "parts")
        r = S.read_files(fs)
        produce(fs)
        got = wait_on(r)
    return rt.run_dir, got


def test_a_file_stream_is_replayed_while_its_files_are_as_they_were(tmp_path, monkeypatch):
    """A FileStream that closed is replayed by a resumed run (its producer and its consumer
    restored); once one of its files changed, it is produced again (both run)."""
    monkeypatch.chdir(tmp_path)

    def run(**kw):
        run_dir, got = _file_stream_run(tmp_path, lambda fs: S.write_files(fs, 5), **kw)
        assert got == [f"item {i}" for i in range(5)]
        return run_dir, _restored(run_dir)
    first, _ = run(resumable=True)
    second, restored = run(resume=first)
    assert sorted(restored) == ["read_files", "write_files"]     # its consumer too
    with open(tmp_path / "parts" / "f002.txt", "w") as f:
        f.write("item 2\n\n")
    _, restored = run(resume=second)
    assert restored == []


def test_a_file_stream_produced_anew_hands_out_only_this_runs_files(tmp_path, monkeypatch):
    """A resumed run whose FileStream's producer changed produces the stream anew: its
    consumer gets the files written in this run only, never one the earlier run left in
    the directory (here the earlier run wrote 5 files and this one rewrites 3 of them)."""
    monkeypatch.chdir(tmp_path)

    def run(n, tag, **kw):
        return _file_stream_run(tmp_path, lambda fs: S.write_tagged(fs, "f", n, tag), **kw)
    first, got = run(5, "v1", resumable=True)
    assert got == [f"f v1 {i}" for i in range(5)]
    second, got = run(3, "v2", resume=first)
    assert got == [f"f v2 {i}" for i in range(3)]       # not f003, f004 of the first run
    assert _restored(second) == []


def test_a_file_stream_partly_restored_gives_each_file_once(tmp_path, monkeypatch):
    """Two producers of a FileStream, one after the other; the resumed run restores the
    first (same call) and runs the second (changed): the consumer gets the restored one's
    files (written by the earlier run) and the new files of the other, each once, and none
    the other left from before (the master knows who wrote which: one producer ran)."""
    monkeypatch.chdir(tmp_path)

    def run(b_tag, b_n, **kw):
        def produce(fs):
            S.write_and_mark(fs, "a", 3, "v1", "a.done")
            S.write_after(fs, "b", b_n, b_tag, "a.done")    # (runs once a has ended)
        return _file_stream_run(tmp_path, produce, workers=3, **kw)
    first, got = run("v1", 3, resumable=True)
    assert got == [f"a v1 {i}" for i in range(3)] + [f"b v1 {i}" for i in range(3)]
    second, got = run("v2", 2, resume=first)
    assert got == [f"a v1 {i}" for i in range(3)] + [f"b v2 {i}" for i in range(2)]
    assert _restored(second) == ["write_and_mark"]


def test_a_file_stream_partly_restored_loses_no_file_of_a_restored_producer(
        tmp_path, monkeypatch):
    """Two producers of a FileStream running at once (which wrote a file cannot be told);
    the resumed run restores one and runs the other, which writes fewer files: every file
    of the restored one is given once, the other's new files once; an earlier file of
    unknown producer that is still as it was is given at the close, and the journal's log
    says so (the other's leftover b002 may be one such: given only when said)."""
    monkeypatch.chdir(tmp_path)

    def run(b_tag, b_n, **kw):
        def produce(fs):
            S.write_tagged(fs, "a", 3, "v1")
            S.write_tagged(fs, "b", b_n, b_tag)
        return _file_stream_run(tmp_path, produce, workers=3, **kw)
    first, got = run("v1", 3, resumable=True)
    assert got == [f"a v1 {i}" for i in range(3)] + [f"b v1 {i}" for i in range(3)]
    second, got = run("v2", 2, resume=first)
    assert _restored(second) == ["write_tagged"]
    expected = [f"a v1 {i}" for i in range(3)] + [f"b v2 {i}" for i in range(2)]
    with sqlite3.connect(os.path.join(second, "journal.db")) as db:
        said = db.execute("SELECT COUNT(*) FROM logs WHERE line LIKE "
                          "'%file(s) the earlier run left are given as they were%'"
                          ).fetchone()[0] == 1
    assert len(got) == len(set(got)) and set(expected) <= set(got), got   # each once
    extra = set(got) - set(expected)
    assert extra <= {"b v1 2"} and (said or not extra), (got, said)   # a leftover: said


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


def test_a_resumed_run_replays_a_closed_stream_and_restores_its_consumer(tmp_path,
                                                                         monkeypatch):
    """A run resumed from a finished one restores the producer of a stream that closed
    (its items come from the earlier run's kept file: it publishes nothing) and the
    consumer that finished, called before the producer (held until the stream replays).
    A third run resumed from the second, whose kept file was damaged meanwhile, reads no
    item from it: producer and consumer run again, and the journal says why."""
    monkeypatch.chdir(tmp_path)
    runs = str(tmp_path / "runs")

    def body():
        s = taskflow.Stream()               # no alias: the run numbers it (objects#1)
        c = S.consume(s)
        S.produce(s, 300)
        return wait_on(S.plain(3)), wait_on(c)

    def restored(run_dir):
        db = sqlite3.connect(os.path.join(run_dir, "journal.db"))
        rows = db.execute("SELECT t.name, r.state FROM transitions r JOIN tasks t ON "
                          "t.id = r.task_id WHERE r.state IN ('RESTORED', 'RERUN')").fetchall()
        logs = [r[0] for r in db.execute("SELECT line FROM logs")]
        items = db.execute("SELECT items FROM streams").fetchall()
        db.close()
        return sorted(rows), logs, items
    with taskflow.Runtime(workers=2, run_dir=runs, resumable=True) as first:
        assert body() == (3, list(range(300)))
    with taskflow.Runtime(workers=2, run_dir=runs, resume=first.run_dir) as second:
        assert body() == (3, list(range(300)))
    rows, logs, items = restored(second.run_dir)
    assert ("produce", "RESTORED") in rows and ("plain", "RESTORED") in rows
    assert ("consume", "RESTORED") in rows and ("consume", "RERUN") not in rows
    assert any("is replayed: 300 item(s)" in line for line in logs), logs
    assert items == [(300,)]
    (kept,) = os.listdir(os.path.join(second.run_dir, "streams"))
    path = os.path.join(second.run_dir, "streams", kept)
    with open(path, "r+b") as f:                # one byte of an item changed
        f.seek(os.path.getsize(path) // 2)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0xFF]))
    with taskflow.Runtime(workers=2, run_dir=runs, resume=second.run_dir) as third:
        assert body() == (3, list(range(300)))
    rows, logs, _ = restored(third.run_dir)
    assert ("produce", "RESTORED") not in rows and ("plain", "RESTORED") in rows
    assert ("consume", "RESTORED") not in rows and ("consume", "RERUN") in rows
    assert any("is not replayed" in line and "damaged at byte" in line for line in logs), logs


def test_a_consumer_run_again_gets_the_items_the_restored_one_did_not_take(tmp_path,
                                                                            monkeypatch):
    """Two consumers of a replayed stream, one group: the first took some of the first
    10 items and ended; the second took the rest. Resumed with the second's call changed:
    the first is restored (called after the producer: at once), the second runs again and
    gets exactly the items the first did not take: every item once in all. A stream with
    two producers whose calls are alike is replayed too."""
    monkeypatch.chdir(tmp_path)
    runs = str(tmp_path / "runs")
    gate = str(tmp_path / "first-done")

    def body(tag):
        s = taskflow.Stream(alias="shared")
        S.produce_in_two(s, 400, 10, gate)
        a = S.consume_first(s, gate)
        b = S.consume_after(s, gate, tag)
        got = wait_on(a, b)
        t = taskflow.Stream(alias="after")
        S.produce(t, 5)
        S.produce(t, 5)                     # (the same call twice: one key, two producers)
        return got, sorted(wait_on(S.consume(t)))
    with taskflow.Runtime(workers=3, run_dir=runs, resumable=True) as first:
        (a1, b1), c1 = body("one")
    with taskflow.Runtime(workers=3, run_dir=runs, resume=first.run_dir) as second:
        (a2, b2), c2 = body("two")
    assert a1 and set(a1) <= set(range(10)) and sorted(a1 + b1) == list(range(400))
    assert a2 == a1 and b2 == sorted(set(range(400)) - set(a1))
    assert c1 == c2 == sorted(2 * list(range(5)))
    db = sqlite3.connect(os.path.join(second.run_dir, "journal.db"))
    rows = db.execute("SELECT t.name, r.state FROM transitions r JOIN tasks t ON "
                      "t.id = r.task_id WHERE r.state IN ('RESTORED', 'RERUN')").fetchall()
    db.close()
    assert sorted(rows) == [("consume", "RESTORED"), ("consume_after", "RERUN"),
                            ("consume_first", "RESTORED"), ("produce", "RESTORED"),
                            ("produce", "RESTORED"), ("produce_in_two", "RESTORED")], rows


def test_streams_a_task_made_replay_with_an_alias_else_their_tasks_say_why_they_run(
        tmp_path, monkeypatch):
    """Two parents (their calls changed: both run again) each make a stream and call its
    consumer and producer as children. The stream with an alias is replayed: both children
    are restored. The one without an alias gets a new id in every run: its children run
    again, and the journal says why."""
    monkeypatch.chdir(tmp_path)
    runs = str(tmp_path / "runs")

    def body(tag):
        return wait_on(S.pipeline_in_a_task(50, "made-in-a-task", tag),
                       S.pipeline_in_a_task(30, None, tag))
    with taskflow.Runtime(workers=3, run_dir=runs, resumable=True) as first:
        assert body("one") == (list(range(50)), list(range(30)))
    with taskflow.Runtime(workers=3, run_dir=runs, resume=first.run_dir) as second:
        assert body("two") == (list(range(50)), list(range(30)))
    db = sqlite3.connect(os.path.join(second.run_dir, "journal.db"))
    rows = db.execute("SELECT t.name, r.state, r.info FROM transitions r JOIN tasks t ON "
                      "t.id = r.task_id WHERE r.state IN ('RESTORED', 'RERUN')").fetchall()
    db.close()
    states = sorted((n, st) for n, st, _ in rows)
    assert states == [("consume", "RERUN"), ("consume", "RESTORED"), ("pipeline_in_a_task",
                      "RERUN"), ("pipeline_in_a_task", "RERUN"), ("produce", "RERUN"),
                      ("produce", "RESTORED")], rows
    why = [info for n, st, info in rows if st == "RERUN" and n != "pipeline_in_a_task"]
    assert all("has a new id in every run" in w and "give it an alias" in w for w in why), why


def test_a_producer_run_again_keeps_the_items_of_the_one_restored_before_it(tmp_path,
                                                                           monkeypatch):
    """Two producers of a stream that closed; in the resumed run the second one's call
    changed: the first is restored, the second runs, so the stream is not replayed but
    produced anew from the first one's earlier items and the second one's new ones: the
    consumer gets each once, in each producer's order, none of the second's old ones."""
    monkeypatch.chdir(tmp_path)
    runs = str(tmp_path / "runs")

    def body(start):
        s = taskflow.Stream(alias="two")
        c = S.consume(s)
        S.produce(s, 3)
        S.produce(s, 3, start)
        return wait_on(c)
    with taskflow.Runtime(workers=3, run_dir=runs, resumable=True) as first:
        assert sorted(body(10)) == [0, 1, 2, 10, 11, 12]
    with taskflow.Runtime(workers=3, run_dir=runs, resume=first.run_dir) as second:
        got = body(20)
    assert sorted(got) == [0, 1, 2, 20, 21, 22]
    assert [x for x in got if x < 10] == [0, 1, 2] and [x for x in got if x >= 20] == [20, 21, 22]
    db = sqlite3.connect(os.path.join(second.run_dir, "journal.db"))
    ids = [r[0] for r in db.execute("SELECT id FROM tasks WHERE name = 'produce' "
                                    "ORDER BY id")]
    restored = [r[0] for r in db.execute("SELECT task_id FROM transitions WHERE state = "
                                         "'RESTORED'")]
    logs = [r[0] for r in db.execute("SELECT line FROM logs")]
    db.close()
    assert len(ids) == 2 and ids[0] in restored and ids[1] not in restored, (ids, restored)
    assert any("the 3 item(s) its 1 restored producer task(s) published" in line
               for line in logs), logs


def test_a_stream_a_killed_master_left_open_is_produced_again_a_closed_one_replayed(
        tmp_path):
    """`taskflow run` SIGKILLed while one producer had closed its stream (its consumer
    waits on a gate) and another held its stream open: the resumed run restores the first
    producer and runs the second again; both consumers get every item once, in order."""
    (tmp_path / "wf.py").write_text(KILLED_WF)
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"))
    argv = [sys.executable, "-m", "taskflow", "run", "--no-progress", "--workers", "4",
            "--adopt-grace", "0"]
    with open(tmp_path / "err1", "w") as err:
        p = subprocess.Popen(argv + ["wf.py"], cwd=tmp_path, env=env,
                             stdout=subprocess.DEVNULL, stderr=err)
    try:
        until(lambda: os.path.isdir(tmp_path / "runs") and os.listdir(tmp_path / "runs"), 60,
              "the run's directory")
        (first,) = os.listdir(tmp_path / "runs")
        until(lambda: _recorded(tmp_path / "runs" / first) == ["produce"] and
              {"open waits", "closed got", "open got"} <= set(_marks(tmp_path)), 60,
              "the closed stream's producer recorded, both consumers polled items")
    finally:
        p.kill()
        p.wait(10)
    before = _marks(tmp_path)
    (tmp_path / "marks").unlink()
    (tmp_path / "go").touch()
    r = subprocess.run(argv + ["--resume", "wf.py"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "CLOSED 0..199 200" in r.stdout and "OPEN 0..149 150" in r.stdout, r.stdout
    again = _marks(tmp_path)
    assert before.count("produce") == 1 and "produce" not in again, again
    assert again.count("produce_open") == 1, again          # (not replayed: it ran again)
    (second,) = set(os.listdir(tmp_path / "runs")) - {first}
    db = sqlite3.connect(str(tmp_path / "runs" / second / "journal.db"))
    logs = [r[0] for r in db.execute("SELECT line FROM logs")]
    db.close()
    assert any("is replayed: 200 item(s)" in line for line in logs), logs
    assert any("stream held is not replayed" in line and "not closed" in line
               for line in logs), logs


KILLED_WF = textwrap.dedent('''
    import os, time
    import taskflow
    from taskflow import STREAM_IN, STREAM_OUT, task, wait_on

    HERE = os.path.dirname(os.path.abspath(__file__))

    def mark(what):
        with open(os.path.join(HERE, "marks"), "a") as f:
            f.write(what + "\\n")

    def gate():
        while not os.path.exists(os.path.join(HERE, "go")):
            time.sleep(0.02)

    @task(s=STREAM_OUT)
    def produce(s, n):
        mark("produce")
        s.publish_list(range(n))
        s.close()

    @task(s=STREAM_OUT)
    def produce_open(s, n):
        mark("produce_open")
        s.publish_list(range(n))
        gate()                          # holds its stream open when the master is killed
        s.close()

    @task(s=STREAM_IN, returns=1)
    def consume(s, name):
        got = []
        while not s.is_closed():
            items = s.poll(timeout=5)
            if items and not got:
                mark(name + " got")
                gate()                  # waits when the master is killed
            got.extend(items)
        got.extend(s.poll())
        return got

    def text(got):
        ok = got == list(range(len(got)))
        return "%d..%d %d" % (got[0], got[-1], len(got)) if ok else repr(got)

    closed, held = taskflow.Stream(), taskflow.Stream(alias="held")
    a, b = consume(closed, "closed"), consume(held, "open")
    produce(closed, 200)
    produce_open(held, 150)
    mark("open waits")
    print("CLOSED", text(wait_on(a)), flush=True)
    print("OPEN", text(wait_on(b)), flush=True)
''')


def _marks(tmp_path):
    p = tmp_path / "marks"
    return p.read_text().split("\n")[:-1] if p.exists() else []


def _recorded(run_dir):
    from taskflow.runtime.recovery.restore import ResumeStore
    try:
        return sorted(r.name for r in ResumeStore(str(run_dir)).by_key.values())
    except FileNotFoundError:
        return []
