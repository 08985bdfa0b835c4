"""The journal writer: the runtime's events into SQLite, off the hot path.

:class:`JournalWriter` subscribes to the runtime's event bus. By default the
SQLite work happens in a small child process (``taskflow.journal.child``):
the bus thread only pickles each delivery down a pipe, its events as plain
tuples (the child does not load taskflow's classes) and the specs and
futures of its rows reduced to plain values (:mod:`.wire`), so the master's
GIL is not spent on SQL or on the parameters' text. ``TASKFLOW_JOURNAL=thread``
writes from the bus thread instead. Either way :class:`JournalDB` writes a
delivery in one transaction, from the changes :mod:`.changes` makes of it
(one handler per kind of event): rows of a task submitted, dispatched and
finished within one delivery (the common case for short tasks) become one
INSERT; other changes are coalesced per task and applied with
``executemany``. WAL mode lets ``taskflow status``, ``taskflow logs
--follow`` and the monitor read while the run writes.
"""
from __future__ import annotations

import json
import logging
import os
import pickle
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from .changes import COLS, ENDED, ERROR, EXIT, ID, STATE, T_SUBMIT, Changes, Row, SpecRows
from .schema import JOURNAL_NAME, SCHEMA

if TYPE_CHECKING:
    from ..runtime.event_types import DoneWire, Event, RowBatch, SubmittedWire, WholeWire
    from ..runtime.events import EventBus
    from .wire import SpecInfo

    # A delivery as the writer gets it: RowBatch as wire.py pickled it (specs are their
    # summaries; the events are plain tuples of their records' fields).
    Delivery = tuple[list[WholeWire[SpecInfo]], list[SubmittedWire[SpecInfo]], list[Event],
                     list[DoneWire]]

log = logging.getLogger(__name__)

_INSERT = f"INSERT INTO task_rows ({','.join(COLS)}) VALUES ({','.join('?' * len(COLS))})"
# Rows without an exit code or an error (nearly all) bind 4 parameters fewer.
_NOERR = EXIT
_INSERT_OK = (f"INSERT INTO task_rows ({','.join(COLS[:_NOERR])}) "
              f"VALUES ({','.join('?' * _NOERR)})")


def _private(run_dir: str, path: str) -> None:
    """The run directory (0700) and the journal file (0600) before SQLite opens it: its
    -wal and -shm files get the database file's permissions."""
    from ..context import private_dir, private_file
    private_dir(run_dir)
    private_file(path)


def run_row(run_id: str, t_start: float, workers: int, version: str) -> tuple[Any, ...]:
    """The ``run`` table's row of a run that starts now in this process."""
    return (run_id, t_start, "running", json.dumps(sys.argv), os.getcwd(),
            socket.gethostname(), os.getpid(), workers, version)


class JournalDB:
    """The SQLite side: owns ``journal.db`` while the run goes on."""

    def __init__(self, path: str, row: tuple[Any, ...]) -> None:
        self.path = path
        import sqlite3      # here: the master imports this module without opening a database
        self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        self._nlogs: dict[int, int] = {}    # log lines seen per task (changes.LOG_CAP)
        self._held: dict[int, Row] = {}     # task rows not inserted yet (see HOLD)
        self._specs = SpecRows(self.db.execute("SELECT id, name, func, constraints FROM specs"))
        self.db.execute(
            "INSERT OR REPLACE INTO run (run_id, t_start, state, argv, cwd, hostname, pid, "
            "workers, version) VALUES (?,?,?,?,?,?,?,?,?)", row)
        self.run_id, *_ = row

    HOLD = 0.5   # s a new task's row waits in memory, so its end lands in the same INSERT

    def write(self, batch: Delivery, final: bool = False) -> None:
        """One delivery of the bus (``runtime.event_types.RowBatch``, as :mod:`.wire`
        pickled it) in one transaction."""
        whole, sub, evs, done = batch
        c = Changes(self._held, self._nlogs, self._specs)
        if whole or sub:
            done = c.rows(whole, sub, done, evs)
        c.events(evs)
        if done:
            c.done_rows(done)
        db = self.db
        db.execute("BEGIN")
        try:
            self._commit(c, final)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _commit(self, c: Changes, final: bool) -> None:
        """The delivery's changes, table by table (inside write's transaction)."""
        db = self.db
        specs = self._specs
        if specs.new:
            db.executemany("INSERT INTO specs (id, name, func, constraints) VALUES (?,?,?,?)",
                           specs.new)
            specs.new = []
        if c.ready:
            db.executemany(_INSERT_OK, c.ready)
        if c.new:
            self._insert_held(c.new, final)
        if c.changes:
            groups: dict[tuple[str, ...], list[Any]] = {}
            for tid, ch in c.changes.items():
                groups.setdefault(tuple(ch), []).append((*ch.values(), tid))
            for keys, rows in groups.items():
                sets = ", ".join(f"{k}=?" for k in keys)
                db.executemany(f"UPDATE task_rows SET {sets} WHERE id=?", rows)
        if c.deps:
            db.executemany("INSERT INTO deps VALUES (?,?)", c.deps)
        trans = c.trans
        if specs.stream_rows:
            trans += [(tid, 0.0, "STREAMS", "", info) for tid, info in specs.stream_rows]
            specs.stream_rows = []
        if trans:
            db.executemany("INSERT INTO transitions VALUES (?,?,?,?,?)", trans)
        if c.logs:
            db.executemany("INSERT INTO logs (task_id, t, level, node, line) "
                           "VALUES (?,?,?,?,?)", c.logs)
        if c.nodes:
            db.executemany("INSERT INTO nodes (name, t_join, slots, info) VALUES (?,?,?,?)",
                           c.nodes)
        # A name may join again (a node back under its old name): a leave or a Slurm
        # state belongs to that name's latest join, not to the rows of earlier ones.
        if c.lost:
            db.executemany("UPDATE nodes SET t_lost=?, reason=? WHERE rowid="
                           "(SELECT MAX(rowid) FROM nodes WHERE name=?)", c.lost)
        if c.states:
            db.executemany("UPDATE nodes SET reason=COALESCE(reason, '') || ? WHERE rowid="
                           "(SELECT MAX(rowid) FROM nodes WHERE name=?)", c.states)
        if c.samples:
            db.executemany("INSERT INTO samples VALUES (?,?,?,?,?,?)", c.samples)
        if c.usage:
            db.executemany("INSERT OR REPLACE INTO usage VALUES (?,?,?)", c.usage)
        if c.memory:
            db.executemany("INSERT INTO memory VALUES (?,?,?,?,?,?,?,?,?)", c.memory)

    def _insert_held(self, new: dict[int, Row], final: bool) -> None:
        """Insert the rows in hand of tasks that ended, or that waited HOLD (all: final)."""
        if final:
            rows, self._held = list(new.values()), {}
        else:
            # Rows of tasks still running wait a little: most short tasks end
            # within HOLD, and one INSERT is cheaper than INSERT + UPDATE.
            cut = time.time() - self.HOLD
            rows = [r for r in new.values() if r[STATE] in ENDED or r[T_SUBMIT] < cut]
            if len(rows) == len(new):
                self._held = {}
            else:
                for r in rows:
                    del new[r[ID]]
        if rows:
            ok = [r[:_NOERR] for r in rows if r[EXIT] is None and r[ERROR] is None]
            if ok:
                self.db.executemany(_INSERT_OK, ok)
            if len(ok) < len(rows):
                self.db.executemany(_INSERT, [r for r in rows if r[EXIT] is not None
                                              or r[ERROR] is not None])

    def close_run(self, t_end: float, state: str, reason: str | None,
                  counts: dict[str, int]) -> None:
        """Mark the run finished, failed or interrupted (``reason``: why, one line) and
        close the database.

        An interrupted run's tasks that did not end are marked INTERRUPTED.
        """
        self.write(([], [], [], []), final=True)
        c = counts
        try:
            if state == "interrupted":
                self.db.execute("UPDATE task_rows SET state='INTERRUPTED' WHERE state NOT IN "
                                "('DONE', 'FAILED', 'CANCELLED', 'INTERRUPTED')")
            self.db.execute(
                "UPDATE run SET t_end=?, state=?, reason=?, n_submitted=?, n_done=?, "
                "n_failed=?, n_cancelled=?, n_retries=? WHERE run_id=?",
                (t_end, state, reason, c.get("submitted"), c.get("done"), c.get("failed"),
                 c.get("cancelled"), c.get("retries"), self.run_id))
        finally:
            self.db.close()


class JournalWriter:
    """The runtime's side: subscribes to the bus, feeds a :class:`JournalDB`.

    ``mode`` "process" (default) writes from a child process, "thread" from
    the bus thread; ``$TASKFLOW_JOURNAL`` sets the default.
    """

    def __init__(self, run_dir: str, row: tuple[Any, ...], bus: EventBus, mode: str | None = None
                 ) -> None:
        _private(run_dir, os.path.join(run_dir, JOURNAL_NAME))
        self.path = os.path.join(run_dir, JOURNAL_NAME)
        self.mode = mode or os.environ.get("TASKFLOW_JOURNAL", "process")
        self._lock = threading.Lock()
        from .wire import EventPickler
        self._pickler = EventPickler()
        self.closed = False
        self.proc: Any = None
        self.db: JournalDB | None = None
        self._row = row
        if self.mode == "process":
            from .child import spawn
            JournalDB(self.path, self._row).db.close()   # tables exist before anyone reads
            self.proc = spawn(self.path, self._row)
        else:
            self.db = JournalDB(self.path, self._row)
        bus.subscribe(self.on_events, rows=True)

    def on_events(self, batch: RowBatch) -> None:
        """From the bus thread: one delivery (``runtime.event_types.RowBatch``)."""
        with self._lock:
            if self.closed:
                return
            whole, sub, evs, done = batch
            # events as plain tuples: the writer process does not load their classes
            body = self._pickler.dumps(("events", (whole, sub, list(map(tuple, evs)), done)))
            if self.proc is not None:
                from .child import send_body
                try:
                    send_body(self.proc, body)
                    return
                except RuntimeError as exc:     # carry on in this process
                    log.warning("%s; writing the journal from the master from now on", exc)
                    self.proc = None
                    self.db = JournalDB(self.path, self._row)
            assert self.db is not None      # thread mode, or the fallback above
            _, delivery = pickle.loads(body)
            self.db.write(delivery)

    def close(self, t_end: float, state: str, reason: str | None, c: dict[str, int]) -> None:
        """Mark the run ``state`` (``reason``: why, one line) with its counts (after the
        bus delivered everything)."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            if self.proc is not None:
                from .child import finish
                finish(self.proc, (t_end, state, reason, c))
            else:
                assert self.db is not None      # thread mode, or on_events' fallback
                self.db.close_run(t_end, state, reason, c)
