"""Many rows into one table in few statements (the writer's inserts and updates of task rows).

``executemany`` steps one statement per row; an INSERT of many rows (``VALUES
(...), (...), ...``) binds the same values but runs the statement once per
:data:`ROWS` rows: about a fifth less of the writer's SQLite time per task
row on this project's machine. An UPDATE of many rows does the same with
``UPDATE ... FROM (VALUES ...)`` (SQLite 3.33 and later; ``executemany``
before). The rows, their values and what the table holds after are those of
``executemany``.
"""
from __future__ import annotations

import sqlite3
from itertools import chain
from typing import Any, Sequence

ROWS = 100          # rows per statement at most...
VARIABLES = 999     # ...and values bound (the limit of SQLite builds before 3.32)
UPDATE_FROM = sqlite3.sqlite_version_info >= (3, 33, 0)


def insert(db: Any, head: str, ncols: int, rows: Sequence[Sequence[Any]]) -> None:
    """``db.executemany(head + " VALUES (?,...)", rows)`` in statements of up to ROWS rows
    (``head``: ``INSERT INTO table (columns)``; each row has ``ncols`` values)."""
    insert_flat(db, head, ncols, list(chain.from_iterable(rows)))


def insert_flat(db: Any, head: str, ncols: int, flat: list[Any]) -> None:
    """:func:`insert` of rows given as one list of their values, ``ncols`` a row."""
    one = "(" + ",".join("?" * ncols) + ")"
    per = max(1, min(ROWS, VARIABLES // ncols))
    step = per * ncols
    whole = len(flat) - len(flat) % step
    if whole:
        sql = f"{head} VALUES {','.join([one] * per)}"
        for i in range(0, whole, step):
            db.execute(sql, flat[i:i + step])
    if whole < len(flat):
        rest = flat[whole:]
        db.executemany(f"{head} VALUES {one}", [rest[i:i + ncols]
                                                for i in range(0, len(rest), ncols)])


def update(db: Any, table: str, cols: Sequence[str], rows: Sequence[Sequence[Any]],
           fixed: str = "") -> None:
    """``db.executemany(f"UPDATE table SET c1=?, ... WHERE id=?", rows)`` (each row: the
    values of ``cols``, then its id; no id twice) in statements of up to ROWS rows;
    ``fixed``: more of the SET clause, the same for every row (``state='DONE'``)."""
    n = len(cols) + 1
    first = f"{fixed}, " if fixed else ""
    single = f"UPDATE {table} SET {first}{', '.join(f'{k}=?' for k in cols)} WHERE id=?"
    per = max(1, min(ROWS, VARIABLES // n))
    whole = len(rows) - len(rows) % per if UPDATE_FROM else 0
    if whole:
        sets = first + ", ".join(f"{k}=v.column{i}" for i, k in enumerate(cols, 1))
        one = "(" + ",".join("?" * n) + ")"
        sql = (f"UPDATE {table} SET {sets} FROM (VALUES {','.join([one] * per)}) AS v "
               f"WHERE {table}.id=v.column{n}")
        flat = list(chain.from_iterable(rows[:whole]))
        step = per * n
        for i in range(0, len(flat), step):
            db.execute(sql, flat[i:i + step])
    if whole < len(rows):
        db.executemany(single, rows[whole:])
