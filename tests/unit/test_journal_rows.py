"""The writer's quick ways with task rows (journal/changes.py, journal/bulk.py) write what
the general ones do: a call of one scalar gets params_text's text, task rows inserted
in statements of many rows are executemany's rows, in order, and rows updated so hold what
executemany's updates leave."""
from __future__ import annotations

import sqlite3

import pytest

from taskflow.journal import bulk
from taskflow.journal.changes import COLS, READY_COLS, Changes, SpecRows
from taskflow.journal.text import params_text

INFO = ("m.f", '{"computing_units": 1}', ("x",), "f")     # a spec as journal/wire.py sums it

SCALARS = [0, -7, 10**59, 10**70, 10**5000, 1.5, float("nan"), float("-inf"), True, None]


@pytest.mark.parametrize("value", SCALARS, ids=range(len(SCALARS)))
def test_a_call_of_one_scalar_reads_as_params_text_says(value):
    c = Changes({}, {}, SpecRows([]), 1000)
    # (task id, t_submit, spec, argv, kwargs, refs, deps, t0, t1, t_dispatch, node, attempts, exit)
    # (the first row of a function goes through Changes._start, the next ones not)
    c.rows([(i, 1.0, INFO, (value,), None, None, None, 1.0, 2.0, 0.0, "n", 1, None)
            for i in (1, 2)], [(3, 1.0, INFO, (value,), None, None, None)], [], [])
    first, second = c.ready[:READY_COLS], c.ready[READY_COLS:]
    text = params_text(("x",), (value,), None, None, 1000)[0]
    assert first[2] == second[2] == c.new[3][2] == text
    assert first[:2] == [1, 1] and first[4] == "DONE" and len(c.ready) == 2 * READY_COLS


def test_rows_of_one_function_share_its_spec_row():
    specs = SpecRows([])
    c = Changes({}, {}, specs, None)
    other = ("m.g", "{}", ("y",), "g")
    whole = [(i, 1.0, INFO if i % 3 else other, (i,), None, None, None, 1.0, 2.0, 0.0, "n", 1,
              None) for i in range(1, 10)]
    c.rows(whole, [], [], [])
    assert c.ready[1::READY_COLS] == [2 if i % 3 == 0 else 1 for i in range(1, 10)]
    assert [s[:2] for s in specs.new] == [(1, "f"), (2, "g")]


@pytest.mark.parametrize("n", [0, 1, 98, 99, 100, 2 * 99 + 7])
def test_bulk_insert_writes_executemanys_rows(n):
    cols = COLS[:10]
    rows = [(i, 1, f"x={i}", "node", "DONE", 1.5 * i, None, 2.0 * i, 3.0, 1) for i in range(n)]
    one, many = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    for db in (one, many):
        db.execute(f"CREATE TABLE t ({', '.join(cols)})")
    one.executemany(f"INSERT INTO t VALUES ({','.join('?' * 10)})", rows)
    bulk.insert(many, f"INSERT INTO t ({','.join(cols)})", 10, rows)
    q = "SELECT rowid, * FROM t ORDER BY rowid"
    assert one.execute(q).fetchall() == many.execute(q).fetchall()
    assert len(rows) == n


@pytest.mark.parametrize("n", [0, 1, 99, 100, 2 * 100 + 7])
def test_bulk_update_leaves_what_executemany_leaves(n):
    rows = [(i, 1, f"x={i}", "", "SUBMITTED", 1.5 * i) for i in range(1, 2 * n + 1)]
    ends = [(3.0 * i, 1, "node", 2.0 * i, 1.0 * i, i) for i in range(1, 2 * n + 1, 2)]
    one, many = sqlite3.connect(":memory:"), sqlite3.connect(":memory:")
    for db in (one, many):
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, spec, params, node, state, "
                   "t_submit REAL, t_end REAL, attempts, t_start REAL, t_dispatch REAL)")
        db.executemany("INSERT INTO t (id, spec, params, node, state, t_submit) "
                       "VALUES (?,?,?,?,?,?)", rows)
    one.executemany("UPDATE t SET state='DONE', t_end=?, attempts=?, node=?, t_start=?, "
                    "t_dispatch=? WHERE id=?", ends)
    bulk.update(many, "t", ("t_end", "attempts", "node", "t_start", "t_dispatch"), ends,
                "state='DONE'")
    q = "SELECT rowid, * FROM t ORDER BY rowid"
    assert one.execute(q).fetchall() == many.execute(q).fetchall()


def test_an_end_of_a_row_inserted_already_is_the_general_update():
    """Changes.ends (the quick way) and Changes.changes (the general one) agree, and a task
    ended twice in one delivery keeps its last end."""
    c = Changes({}, {}, SpecRows([]), None)
    # (task id, t_start, t_end, t_dispatch, node, attempts, name, exit code)
    c.done_rows([(1, 2.0, 3.0, 1.0, "n", 1, "f", None), (2, 0.0, 3.0, 1.0, "n", 1, "f", None),
                 (3, 2.0, 3.0, 1.0, "n", 1, "f", None), (3, 4.0, 5.0, 1.5, "m", 2, "f", 7)])
    assert c.ends == {1: (3.0, 1, "n", 2.0, 1.0, 1)}
    assert c.changes[2] == {"state": "DONE", "t_end": 3.0, "attempts": 1, "node": "n",
                            "t_dispatch": 1.0}
    assert c.changes[3] == {"state": "DONE", "t_end": 5.0, "attempts": 2, "node": "m",
                            "t_start": 4.0, "t_dispatch": 1.5, "exit_code": 7}


def test_a_row_waits_from_when_the_writer_got_it_not_from_its_call(tmp_path):
    """A row the bus held back (its call long ago) is not inserted at once: its end, in the
    next delivery, lands in the same INSERT (JournalDB.HOLD counts from the row's arrival)."""
    import time

    from taskflow.journal.writer import JournalDB
    path = str(tmp_path / "journal.db")
    db = JournalDB(path, ("r", 0.0, "running", "[]", "/", "h", 1, 1, "v"))
    t = time.time() - 10                # called 10 s ago, delivered now
    db.write(([], [(1, t, INFO, (5,), None, None, None)], [], []))
    read = sqlite3.connect(path)
    assert read.execute("SELECT COUNT(*) FROM task_rows").fetchone() == (0,)
    # (task id, t_start, t_end, t_dispatch, node, attempts, name, exit code)
    db.write(([], [], [], [(1, t + 2, t + 3, t + 1, "n", 1, "f", None)]))
    assert read.execute("SELECT id, params, node, state, t_submit, t_dispatch, t_start, t_end, "
                        "attempts FROM task_rows").fetchall() == [
        (1, "x=5", "n", "DONE", t, t + 1, t + 2, t + 3, 1)]
    db.db.close()
    read.close()


def test_an_end_with_an_exit_code_is_the_general_update_too():
    """A program's end (an exit code) of a row inserted already: Changes.coded_ends holds
    what the general update sets; a task ended twice in one delivery keeps its last end."""
    c = Changes({}, {}, SpecRows([]), None)
    # (task id, t_start, t_end, t_dispatch, node, attempts, name, exit code)
    c.done_rows([(1, 2.0, 3.0, 1.0, "n", 1, "p", 0), (2, 2.0, 3.0, 1.0, "n", 1, "f", None),
                 (4, 2.0, 3.0, 1.0, "n", 1, "p", 3), (4, 4.0, 5.0, 1.5, "m", 2, "p", 0)])
    assert c.coded_ends == {1: (3.0, 1, "n", 2.0, 1.0, 0, 1)}
    assert c.ends == {2: (3.0, 1, "n", 2.0, 1.0, 2)}
    assert c.changes[4] == {"state": "DONE", "t_end": 5.0, "attempts": 2, "node": "m",
                            "t_start": 4.0, "t_dispatch": 1.5, "exit_code": 0}


def test_a_programs_row_keeps_its_exit_code_in_whole_or_updated_at_its_end(tmp_path):
    """Rows with an exit code go in as the general INSERT and UPDATE leave them: one
    that ended before it went in (whole), one that went in before its end (its code set by
    the end's UPDATE), and a call of no arguments reads as params_text says."""
    from taskflow.journal.writer import JournalDB
    path = str(tmp_path / "journal.db")
    db = JournalDB(path, ("r", 0.0, "running", "[]", "/", "h", 1, 1, "v"))
    prog = ("m.p", '{"computing_units": 1}', (), "p")
    t = 1000.0
    # task 1 ends in the delivery that brings it; task 2 is still queued
    db.write(([], [(1, t, prog, (), None, None, None), (2, t, prog, (), None, None, None)], [],
              [(1, t + 2, t + 3, t + 1, "n", 1, "p", 0)]))
    db.HOLD = 0.0                       # (task 2's row waits no more: it goes in SUBMITTED)
    db.write(([], [], [], []))
    read = sqlite3.connect(path)
    assert read.execute("SELECT id, state FROM task_rows ORDER BY id").fetchall() == [
        (1, "DONE"), (2, "SUBMITTED")]
    db.write(([], [], [], [(2, t + 4, t + 5, t + 3.5, "m", 1, "p", 2)]))
    assert read.execute("SELECT id, params, node, state, t_submit, t_dispatch, t_start, t_end, "
                        "attempts, exit_code, error FROM task_rows ORDER BY id").fetchall() == [
        (1, params_text((), (), None, None)[0], "n", "DONE", t, t + 1, t + 2, t + 3, 1, 0, None),
        (2, "", "m", "DONE", t, t + 3.5, t + 4, t + 5, 1, 2, None)]
    db.db.close()
    read.close()


@pytest.mark.parametrize("code", [None, 3])
def test_a_failed_rows_error_text_goes_in_even_without_its_first_line(tmp_path, code):
    """A row inserted with any of its error columns set goes in whole: its full error and
    traceback are kept even when the event had no first line (and with or without an exit
    code), as the general INSERT keeps them."""
    from taskflow.journal.writer import JournalDB
    path = str(tmp_path / "journal.db")
    db = JournalDB(path, ("r", 0.0, "running", "[]", "/", "h", 1, 1, "v"))
    t = 1000.0
    # (kind, t, task id, name, node, (t_start, t_end, first line, error info, attempts,
    # t_dispatch)); error info: (text, remote traceback, exit code)
    failed = ("failed", t + 3, 1, "p", "n", (t + 2, t + 3, "", ("the full text", "tb", code),
                                             1, t + 1))
    db.write(([], [(1, t, INFO, (5,), None, None, None)], [failed], []))
    read = sqlite3.connect(path)
    assert read.execute("SELECT state, exit_code, error, error_full, traceback "
                        "FROM task_rows").fetchall() == [("FAILED", code, None, "the full text",
                                                         "tb")]
    db.db.close()
    read.close()
