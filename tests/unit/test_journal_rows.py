"""The writer's quick ways with task rows (journal/changes.py, journal/bulk.py) write what
the general ones do: a call of one scalar gets params_text's text, and task rows inserted
in statements of many rows are executemany's rows, in order."""
from __future__ import annotations

import sqlite3

import pytest

from taskflow.journal import bulk
from taskflow.journal.changes import COLS, Changes, SpecRows
from taskflow.journal.text import params_text

INFO = ("m.f", '{"computing_units": 1}', ("x",), "f")     # a spec as journal/wire.py sums it

SCALARS = [0, -7, 10**59, 10**70, 10**5000, 1.5, float("nan"), float("-inf"), True, None]


@pytest.mark.parametrize("value", SCALARS, ids=range(len(SCALARS)))
def test_a_call_of_one_scalar_reads_as_params_text_says(value):
    c = Changes({}, {}, SpecRows([]), 1000)
    # (task id, t_submit, spec, argv, kwargs, refs, deps, t0, t1, t_dispatch, node, attempts, exit)
    c.rows([(1, 1.0, INFO, (value,), None, None, None, 1.0, 2.0, 0.0, "n", 1, None)], [], [], [])
    (row,) = c.ready
    assert row[2] == params_text(("x",), (value,), None, None, 1000)[0]
    assert row[:2] == (1, 1) and row[4] == "DONE"


def test_rows_of_one_function_share_its_spec_row():
    specs = SpecRows([])
    c = Changes({}, {}, specs, None)
    other = ("m.g", "{}", ("y",), "g")
    whole = [(i, 1.0, INFO if i % 3 else other, (i,), None, None, None, 1.0, 2.0, 0.0, "n", 1,
              None) for i in range(1, 10)]
    c.rows(whole, [], [], [])
    assert [r[1] for r in c.ready] == [2 if i % 3 == 0 else 1 for i in range(1, 10)]
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
