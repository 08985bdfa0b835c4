"""The journal's writer reads every kind of event as the runtime builds it.

The runtime's events are named tuples (taskflow.events); the
writer process gets them as plain tuples and unpacks them in that order
(taskflow.journal.changes). A field added, dropped or moved on one side only
shows here as a value in the wrong column.
"""
from __future__ import annotations

import json
import sqlite3

from taskflow.journal.writer import JournalDB
from taskflow import events as E

INFO = ("m.f", '{"computing_units": 1}', ("a",), "f")     # a spec as journal/wire.py sums it


def _write(tmp_path, *deliveries):
    path = str(tmp_path / "journal.db")
    db = JournalDB(path, ("run", 1.0, "running", "[]", "/", "host", 1, 2, "v"))
    for whole, sub, evs, done in deliveries:
        db.write((whole, sub, [tuple(e) for e in evs], done))    # as JournalWriter sends them
    db.close_run(50.0, "finished", None, {"submitted": 3})
    con = sqlite3.connect(path)
    con.row_factory = sqlite3.Row
    return con


def test_task_events_and_rows(tmp_path):
    sub = [(1, 10.0, INFO, [1], None, None, None), (2, 10.0, INFO, [2], None, None, [1]),
           (3, 10.0, INFO, [3], None, None, None)]
    first = [E.Ready("ready", 11.0, 2, "f", "", None),
             E.Dispatched("dispatched", 12.0, 2, "f", "n0", [("n0", 2)]),
             E.Running("running", 13.0, 2, "f", "n0", None),
             E.Log("log", 13.5, 2, "", "n0", ("STDERR", "a line")),
             E.Usage("usage", 14.0, 2, "f", "n0", (0.25, 4096, 800, -1, "wait4")),
             E.Retry("retry", 15.0, 3, "f", "n1", "lost with its node"),
             E.Resumed("rerun", 15.5, 3, "f", "", "its code changed"),
             # (the error as journal/wire.py reduces it: text, remote traceback, exit code)
             E.Ended("failed", 16.0, 3, "f", "n0", (15.8, 16.0, "boom", ("boom\nmore", "tb", 4), 2,
                                                    15.7))]
    con = _write(tmp_path, ([], sub, first, [(2, 13.0, 14.0, 12.0, "n0", 1, "f", None)]))
    rows = {r["id"]: dict(r) for r in con.execute("SELECT * FROM tasks")}
    assert rows[1]["state"] == "SUBMITTED" and rows[1]["params"] == "a=1"
    assert {k: rows[2][k] for k in ("state", "node", "t_dispatch", "t_start", "t_end",
                                    "attempts")} == {"state": "DONE", "node": "n0",
                                                     "t_dispatch": 12.0, "t_start": 13.0,
                                                     "t_end": 14.0, "attempts": 1}
    assert {k: rows[3][k] for k in ("state", "node", "t_start", "t_end", "attempts",
                                    "exit_code", "error", "error_full", "traceback",
                                    "t_dispatch")} == {
        "state": "FAILED", "node": "n0", "t_start": 15.8, "t_end": 16.0, "attempts": 2,
        "exit_code": 4, "error": "boom", "error_full": "boom\nmore", "traceback": "tb",
        "t_dispatch": 15.7}
    trans = [tuple(r) for r in con.execute("SELECT task_id, t, state, node, info FROM "
                                           "transitions ORDER BY rowid")]
    assert trans == [(2, 11.0, "READY", "", None), (2, 12.0, "PLACED", "n0", '[["n0", 2]]'),
                     (3, 15.0, "RETRY", "n1", "lost with its node"),
                     (3, 15.5, "RERUN", "", "its code changed"),
                     # the attempt that ran again (its start unknown: it never ran)
                     (3, 15.0, "ATTEMPT", "n1", '{"retry": 15.0, "end": 15.0, "start": null}')]
    assert [tuple(r) for r in con.execute("SELECT task_id, t, level, node, line FROM logs")] \
        == [(2, 13.5, "STDERR", "n0", "a line")]
    assert [tuple(r) for r in con.execute("SELECT * FROM usage")] == \
        [(2, 0.25, 4096, 800, None, "wait4")]
    assert [tuple(r) for r in con.execute("SELECT * FROM deps")] == [(2, 1)]


def test_a_task_submitted_and_done_in_one_delivery_is_one_row(tmp_path):
    whole = [(1, 10.0, INFO, [7], None, None, None, 11.0, 12.0, 10.5, "n0", 1, None),
             (2, 10.0, INFO, [8], None, None, None, 11.0, 12.0, 10.5, "n0", 1, 3)]
    con = _write(tmp_path, (whole, [], [], []))
    got = [tuple(r) for r in con.execute("SELECT id, state, params, node, t_start, t_end, "
                                         "exit_code FROM tasks ORDER BY id")]
    assert got == [(1, "DONE", "a=7", "n0", 11.0, 12.0, None),
                   (2, "DONE", "a=8", "n0", 11.0, 12.0, 3)]


def test_node_events(tmp_path):
    evs = [E.NodeJoin("node_join", 1.0, 0, "", "n0", {"slots": 4, "hostname": "h"}),
           E.Sample("sample", 2.0, 0, "", "n0", {"cpu": 50.0, "mem": 10.0, "load1": 0.5}),
           E.Memory("memory", 3.0, 0, "", "n0", (100, 60, 40, True, [
               ("spill", 7, 30), ("spill", 8, 10), ("read", 0, 2), ("pause", 0, 100)])),
           E.NodeGone("node_leaving", 3.5, 0, "", "n0", "idle"),    # not journalled
           E.NodeGone("node_left", 4.0, 0, "", "n0", "left: idle"),
           E.NodeNote("node_state", 5.0, 0, "", "n0", {"job_id": "12", "state": "COMPLETED"})]
    con = _write(tmp_path, ([], [], evs, []))
    (node,) = [dict(r) for r in con.execute("SELECT * FROM nodes")]
    assert (node["name"], node["t_join"], node["slots"], node["t_lost"]) == ("n0", 1.0, 4, 4.0)
    assert node["reason"] == "left: idle [slurm job 12: COMPLETED]"
    assert json.loads(node["info"]) == {"slots": 4, "hostname": "h"}
    assert [tuple(r)[:5] for r in con.execute("SELECT * FROM samples")] == \
        [("n0", 2.0, 50.0, 10.0, 0.5)]
    assert [tuple(r) for r in con.execute("SELECT * FROM memory")] == \
        [("n0", 3.0, 100, 60, 40, 1, 2, 40, 2)]


def test_a_file_version_forgotten_before_the_journal_took_its_row_is_named_by_the_users_path(
        tmp_path):
    """wait_on_file forgets the file (its versions untied) maybe before the bus hands the
    task's row to the journal: the row still names the user's path, not the version's."""
    import pickle

    from taskflow.future import Future
    from taskflow.graph.registry import Registry
    from taskflow.journal.wire import EventPickler

    class Host:
        n = 0

        def new_did(self):
            Host.n += 1
            return Host.n
    reg = Registry(str(tmp_path / "data"))
    item = reg.track_file(str(tmp_path / "out.txt"), "file", Host())
    v1 = Future(None, None, 2)
    version = reg.new_file_version(item, v1)
    reg.forget_file(str(tmp_path / "out.txt"))
    assert v1._item is None and version != str(tmp_path / "out.txt")
    assert pickle.loads(EventPickler().dumps(v1)) == (2, str(tmp_path / "out.txt"))
