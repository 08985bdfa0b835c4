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

A write that fails (a full disk; the database locked by another process for
longer than :data:`.failure.LOCK_WAIT`; a damaged file) is not swallowed: the
writer says why in one line (:func:`.failure.describe`) on its status pipe,
keeps nothing more, and the runtime fails the run (runtime/recovery/recordfail.py).
So that the run's row can still say ``failed`` and why on a full disk, the
journal keeps :data:`RESERVE` bytes of room in a file beside it, let go of
to write that row (and when the run ends well).
"""
from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from .changes import (CODED_END_COLS, COLS, END_COLS, ENDED, ERROR, EXIT, ID, RECEIVED, STATE,
                      Changes, Row, SpecRows)
from .failure import LOCK_WAIT, describe
from .schema import JOURNAL_NAME, SCHEMA

if TYPE_CHECKING:
    from ..events import DoneWire, Event, RowBatch, SubmittedWire, WholeWire
    from ..runtime.bus import EventBus
    from .wire import SpecInfo

    # A delivery as the writer gets it: RowBatch as wire.py pickled it (specs are their
    # summaries; the events are plain tuples of their records' fields).
    Delivery = tuple[list[WholeWire[SpecInfo]], list[SubmittedWire[SpecInfo]], list[Event],
                     list[DoneWire]]

log = logging.getLogger(__name__)

_INSERT = f"INSERT INTO task_rows ({','.join(COLS)}) VALUES ({','.join('?' * len(COLS))})"
# Rows without an exit code or an error (nearly all) bind 4 parameters fewer.
_NOERR = EXIT
_ENDED_SQL = "(" + ", ".join(f"'{s}'" for s in sorted(ENDED)) + ")"   # the states a task ends in
_INSERT_OK_HEAD = f"INSERT INTO task_rows ({','.join(COLS[:_NOERR])})"     # (bulk.insert)
# ...and of rows that ended well with an exit code (programs): their columns to exit_code
_CODED = EXIT + 1
_NO_ERROR = [None] * (RECEIVED - ERROR)     # a row's error columns when it has no error
_INSERT_CODED_HEAD = f"INSERT INTO task_rows ({','.join(COLS[:_CODED])})"


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


RESERVE = 64 * 1024     # bytes kept free beside the journal for its last row (see above)


def _reserve_path(path: str) -> str:
    return os.path.join(os.path.dirname(path), ".journal-reserve")


def _release(path: str) -> None:
    try:
        os.unlink(_reserve_path(path))
    except OSError:
        pass


def mark_failed(db: Any, path: str, t: float, reason: str) -> bool:
    """After a failed write: the run's row says ``failed`` and why (its task rows may be
    missing: it must not read as running, let alone finished), in the room the reserve
    file kept. False if even that could not be written (readers then say the run was
    interrupted)."""
    _release(path)
    try:
        db.execute("PRAGMA busy_timeout = 1000")     # (not another LOCK_WAIT)
        db.execute("UPDATE run SET t_end=?, state='failed', reason=?", (t, reason))
        return True
    except Exception:  # noqa: BLE001 - still full, or locked
        return False


def mark_file_failed(path: str, t: float, reason: str) -> bool:
    """:func:`mark_failed` from the master, when the writer process is gone."""
    import sqlite3
    try:
        db = sqlite3.connect(path, isolation_level=None, timeout=1.0)
    except sqlite3.Error:
        return False
    try:
        return mark_failed(db, path, t, reason)
    finally:
        db.close()


class WriteFailed(Exception):
    """A write of the journal failed; the message says which file and why (one line)."""


class JournalDB:
    """The SQLite side: owns ``journal.db`` while the run goes on."""

    def __init__(self, path: str, row: tuple[Any, ...], by_digest: int | None = None) -> None:
        self.path = path
        self.by_digest = by_digest  # bytes: a value's pickle over this is kept by digest
        import sqlite3      # here: the master imports this module without opening a database
        try:
            # a lock another process holds is waited for, LOCK_WAIT seconds at most
            self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None,
                                      timeout=LOCK_WAIT)
            self.db.execute("PRAGMA journal_mode=WAL")
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.executescript(SCHEMA)
            self._specs = SpecRows(self.db.execute(
                "SELECT id, name, func, constraints FROM specs"))
            self.db.execute(
                "INSERT OR REPLACE INTO run (run_id, t_start, state, argv, cwd, hostname, "
                "pid, workers, version) VALUES (?,?,?,?,?,?,?,?,?)", row)
        except (sqlite3.Error, OSError) as exc:
            raise WriteFailed(describe("journal", path, exc)) from None
        if not os.path.exists(_reserve_path(path)):
            try:
                with open(_reserve_path(path), "wb") as f:
                    f.write(bytes(RESERVE))
            except OSError:                 # no room even for that: said at the first write
                _release(path)
        self._nlogs: dict[int, int] = {}    # log lines seen per task (changes.LOG_CAP)
        self._held: dict[int, Row] = {}     # task rows not inserted yet (see HOLD)
        self.run_id, *_ = row

    # s a new task's row waits in memory after the writer got it, so that its end lands in
    # the same INSERT. (Counted from its submission, a row the bus had held back for most of
    # a second in a burst was inserted at once and updated at the next delivery: INSERT +
    # UPDATE for 25-95% of the rows of a busy run, about twice the writer's CPU per task.)
    HOLD = 0.5

    def write(self, batch: Delivery, final: bool = False) -> None:
        """One delivery of the bus (``events.RowBatch``, as :mod:`.wire`
        pickled it) in one transaction."""
        whole, sub, evs, done = batch
        c = Changes(self._held, self._nlogs, self._specs, self.by_digest, time.time())
        if whole or sub:
            done = c.rows(whole, sub, done, evs)
        c.events(evs)
        if done:
            c.done_rows(done)
        db = self.db
        try:
            db.execute("BEGIN IMMEDIATE")       # (the write lock now, or a wait for it)
            self._commit(c, final)
            db.execute("COMMIT")
        except Exception as exc:
            if db.in_transaction:       # (SQLite may have rolled back already: a full disk)
                try:
                    db.execute("ROLLBACK")
                except Exception:  # noqa: BLE001 - the first error is the one to tell
                    pass
            why = describe("journal", self.path, exc)
            self.mark_failed(time.time(), why)      # readers see it now, as well as they can
            raise WriteFailed(why) from None

    def _commit(self, c: Changes, final: bool) -> None:
        """The delivery's changes, table by table (inside write's transaction)."""
        from . import bulk      # (here: it imports sqlite3, which the master's start need not)
        db = self.db
        specs = self._specs
        if specs.new:
            db.executemany("INSERT INTO specs (id, name, func, constraints) VALUES (?,?,?,?)",
                           specs.new)
            specs.new = []
        if c.ready:
            bulk.insert_flat(db, _INSERT_OK_HEAD, _NOERR, c.ready)
        if c.new:
            self._insert_held(c.new, final)
        if c.attempts:              # (before the updates: a row's t_start is the attempt's)
            self._attempts(c)
        if c.changes or c.ends or c.coded_ends:
            groups: dict[tuple[str, ...], list[Any]] = {}
            for tid, ch in c.changes.items():
                groups.setdefault(tuple(ch), []).append((*ch.values(), tid))
            if c.ends:          # (their state is DONE: a literal, not a value bound)
                bulk.update(db, "task_rows", END_COLS[1:], list(c.ends.values()),
                            "state='DONE'")
            if c.coded_ends:
                bulk.update(db, "task_rows", CODED_END_COLS[1:], list(c.coded_ends.values()),
                            "state='DONE'")
            for keys, rows in groups.items():
                bulk.update(db, "task_rows", keys, rows)
        if c.deps:
            db.executemany("INSERT INTO deps VALUES (?,?)", c.deps)
        if c.children:
            db.executemany("INSERT INTO children VALUES (?,?)", c.children)
        trans = c.trans
        if specs.stream_rows:
            trans += [(tid, 0.0, "STREAMS", "", info) for tid, info in specs.stream_rows]
            specs.stream_rows = []
        if specs.file_rows:
            trans += [(tid, 0.0, "FILES", "", info) for tid, info in specs.file_rows]
            specs.file_rows = []
        if specs.value_rows:
            trans += [(tid, 0.0, "VALUES", "", info) for tid, info in specs.value_rows]
            specs.value_rows = []
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
            db.executemany("INSERT OR REPLACE INTO usage (task_id, cpu, rss, rchar, wchar, "
                           "rss_how) VALUES (?,?,?,?,?,?)", c.usage)
        if c.streams:
            db.executemany("INSERT OR IGNORE INTO streams (id, kind, name, t_open) "
                           "VALUES (?,?,?,?)", c.streams)
        if c.stream_tasks:
            db.executemany("INSERT INTO stream_tasks VALUES (?,?,?,?)", c.stream_tasks)
        if c.stream_ends:
            db.executemany("UPDATE streams SET t_close=?, items=?, error=? WHERE id=?",
                           c.stream_ends)
        if c.memory:
            db.executemany("INSERT INTO memory VALUES (?,?,?,?,?,?,?,?,?)", c.memory)
        if c.moves:
            db.executemany("INSERT INTO moves VALUES (?,?,?,?,?,?,?)", c.moves)

    def _attempts(self, c: Changes) -> None:
        """The ``ATTEMPT`` transitions of the attempts that ran again (changes._attempt)."""
        for tid, t, node, info, from_table in c.attempts:
            if from_table:
                for (start,) in self.db.execute("SELECT t_start FROM task_rows WHERE id=?",
                                                (tid,)):
                    info["start"] = start
            c.trans.append((tid, t, "ATTEMPT", node, json.dumps(info)))

    def _insert_held(self, new: dict[int, Row], final: bool) -> None:
        """Insert the rows in hand of tasks that ended, or that waited HOLD (all: final)."""
        if final:
            rows, self._held = list(new.values()), {}
        else:
            # Rows of tasks still running wait a little: most short tasks end
            # within HOLD, and one INSERT is cheaper than INSERT + UPDATE.
            cut = time.time() - self.HOLD
            rows = [r for r in new.values() if r[STATE] in ENDED or r[RECEIVED] < cut]
            if len(rows) == len(new):
                self._held = {}
            else:
                for r in rows:
                    del new[r[ID]]
        if rows:
            from . import bulk
            ok: list[Row] = []          # no exit code, no error (the columns up to attempts)
            coded: list[Row] = []       # an exit code, no error (a program's: to exit_code)
            failed: list[Row] = []      # an error (any of its columns): every column
            for r in rows:
                if r[ERROR:RECEIVED] != _NO_ERROR:    # (error, error_full or traceback)
                    failed.append(r[:RECEIVED])
                elif r[EXIT] is None:
                    ok.append(r[:_NOERR])
                else:
                    coded.append(r[:_CODED])
            if ok:
                bulk.insert(self.db, _INSERT_OK_HEAD, _NOERR, ok)
            if coded:
                bulk.insert(self.db, _INSERT_CODED_HEAD, _CODED, coded)
            if failed:
                self.db.executemany(_INSERT, failed)

    def close_run(self, t_end: float, state: str, reason: str | None,
                  counts: dict[str, int]) -> None:
        """Mark the run finished, failed or interrupted (``reason``: why, one line) and
        close the database.

        An interrupted run's tasks that did not end are marked INTERRUPTED when they had
        started, CANCELLED when they never did (they were not interrupted: nothing ran).
        """
        c = dict(counts)
        try:
            self.write(([], [], [], []), final=True)
            if state == "interrupted":
                never = self.db.execute(
                    "UPDATE task_rows SET state='CANCELLED', error=COALESCE(error, ?) "
                    f"WHERE state NOT IN {_ENDED_SQL} AND t_start IS NULL",
                    (f"never started: the run was interrupted ({reason or 'stopped'})",))
                c["cancelled"] = (c.get("cancelled") or 0) + max(0, never.rowcount)
                self.db.execute(f"UPDATE task_rows SET state='INTERRUPTED' WHERE state NOT IN "
                                f"{_ENDED_SQL}")
            self.db.execute(
                "UPDATE run SET t_end=?, state=?, reason=?, n_submitted=?, n_done=?, "
                "n_failed=?, n_cancelled=?, n_retries=? WHERE run_id=?",
                (t_end, state, reason, c.get("submitted"), c.get("done"), c.get("failed"),
                 c.get("cancelled"), c.get("retries"), self.run_id))
            _release(self.path)
        except WriteFailed:
            raise
        except Exception as exc:    # (the last row, in the room the reserve kept)
            why = describe("journal", self.path, exc)
            self.mark_failed(t_end, reason if state == "failed" and reason else why)
            raise WriteFailed(why) from None
        finally:
            self.db.close()

    def mark_failed(self, t: float, reason: str) -> bool:
        """After a failed write: the run's row says ``failed`` and why (see
        :func:`mark_failed`)."""
        return mark_failed(self.db, self.path, t, reason)

    def close_failed(self, t_end: float, reason: str) -> None:
        """The run's end after a failed write (``reason``: the runtime's), then close."""
        try:
            self.mark_failed(t_end, reason)
        finally:
            self.db.close()


class JournalWriter:
    """The runtime's side: subscribes to the bus, feeds a :class:`JournalDB`.

    ``mode`` "process" (default) writes from a child process, "thread" from
    the bus thread; ``$TASKFLOW_JOURNAL`` sets the default. The first write
    that fails is reported to ``on_failure`` (once, from the bus thread or the
    thread that watches the writer process) and :attr:`failed` says why;
    nothing is written after it but the run's end.

    In process mode the tables and the writer process are made by a thread of
    their own (SQLite's first writes and their syncs took 20-100 ms of the
    master's start, before the nodes'), so that they overlap the nodes' start:
    :meth:`ready` waits for them and raises what went wrong (the runtime does not
    start without its journal); a delivery that comes first waits for them too,
    so no row is lost or reordered.
    """

    def __init__(self, run_dir: str, row: tuple[Any, ...], bus: EventBus, mode: str | None = None,
                 on_failure: Callable[[str], None] | None = None) -> None:
        self.path = os.path.join(run_dir, JOURNAL_NAME)
        self.mode = mode or os.environ.get("TASKFLOW_JOURNAL", "process")
        self._lock = threading.Lock()
        from .wire import EventPickler
        from ..graph.recorded import BY_DIGEST      # (the master's side: the package here)
        self._pickler = EventPickler()
        self._by_digest = BY_DIGEST
        self.closed = False
        self.proc: Any = None
        self.db: JournalDB | None = None
        self.failed: str | None = None          # why a write failed (one line)
        self.on_failure = on_failure
        self._watch: threading.Thread | None = None
        self._row = row
        self._opening: threading.Thread | None = None    # making the tables and the writer
        self._not_open: BaseException | None = None      # why they could not be made
        if self.mode == "process":
            self._opening = threading.Thread(target=self._open, daemon=True,
                                             name="taskflow-journal-open")
            self._opening.start()
        else:
            self._open()
        bus.subscribe(self.on_events, rows=True)

    def _open(self) -> None:
        """The tables, then (process mode) the writer process and its watcher: in a
        thread of its own in process mode (see above)."""
        try:
            try:
                _private(os.path.dirname(self.path), self.path)
            except OSError as exc:
                raise WriteFailed(describe("journal", self.path, exc)) from None
            if self.mode != "process":
                self.db = JournalDB(self.path, self._row, self._by_digest)
                return
            from .child import spawn
            JournalDB(self.path, self._row).db.close()   # tables exist before anyone reads
            self.proc = spawn(self.path, self._row, self._by_digest)
        except BaseException as exc:  # noqa: BLE001 - raised again by ready()
            self._not_open = exc
            return
        self._watch = threading.Thread(target=self._watch_writer, daemon=True,
                                       name="taskflow-journal-watch")
        self._watch.start()

    def _wait_open(self) -> bool:
        """Wait until the tables and the writer are made; False if they could not be."""
        opening = self._opening
        if opening is not None:
            opening.join()
        return self._not_open is None

    def ready(self) -> None:
        """Wait until the journal is open; raise why it could not be opened
        (:class:`WriteFailed` when SQLite could not make its tables)."""
        if not self._wait_open():
            assert self._not_open is not None
            raise self._not_open

    def _failed(self, message: str) -> None:
        """The first failure: kept, and told to the runtime."""
        if self.failed is None:
            self.failed = message
            if self.on_failure is not None:
                self.on_failure(message)

    def _watch_writer(self) -> None:
        """The writer process's status pipe: a line when a write failed; EOF when it ends
        (a writer that dies before the run's end fails it, and the master marks it so)."""
        from .child import read_status
        proc = self.proc
        for message in read_status(proc):
            self._failed(message)
        status = proc.wait()
        if status and self.failed is None and not self.closed:
            self._gone(status)

    def _gone(self, status: int) -> None:
        """The writer process died: the run fails, and its row says so if it can."""
        how = f"was killed by signal {-status}" if status < 0 else f"ended with status {status}"
        message = (f"journal {self.path}: its writer process {how}; rows it had not written "
                   f"are missing")
        mark_file_failed(self.path, time.time(), message)
        self._failed(message)

    def on_events(self, batch: RowBatch) -> None:
        """From the bus thread: one delivery (``events.RowBatch``)."""
        if not self._wait_open():
            return          # (the runtime did not start: ready() raised why)
        with self._lock:
            if self.closed or self.failed is not None:
                return
            whole, sub, evs, done = batch
            # events as plain tuples: the writer process does not load their classes
            body = self._pickler.dumps(("events", (whole, sub, list(map(tuple, evs)), done)))
            if self.proc is not None:
                from .child import send_body
                try:
                    send_body(self.proc, body)
                except RuntimeError:            # gone: what it had not written is lost
                    self._gone(self.proc.wait())
                return
            assert self.db is not None      # thread mode
            from .child import load_plain
            _, delivery = load_plain(body)
            try:
                self.db.write(delivery)
            except WriteFailed as exc:
                self._failed(str(exc))

    def close(self, t_end: float, state: str, reason: str | None, c: dict[str, int]) -> None:
        """Mark the run ``state`` (``reason``: why, one line) with its counts (after the
        bus delivered everything). A failure is in :attr:`failed` afterwards."""
        if not self._wait_open():
            self.closed = True      # (nothing to close: ready() raised why)
            return
        with self._lock:
            if self.closed:
                return
            self.closed = True
            try:
                self._close(t_end, state, reason, c)
            finally:
                if self.failed is not None:     # (its end may not be in the journal)
                    from .endfile import keep
                    keep(self.path, t_end, "failed" if state == "finished" else state,
                         reason or self.failed)

    def _close(self, t_end: float, state: str, reason: str | None, c: dict[str, int]) -> None:
        """:meth:`close` under its lock."""
        if self.proc is not None:
            from .child import finish
            status = finish(self.proc, (t_end, state, reason, c))
            if self._watch is not None:
                self._watch.join(10)
            if status and self.failed is None:
                self._gone(status)
            elif self.failed is not None and status:     # its end, if it could not
                mark_file_failed(self.path, t_end, reason or self.failed)
            return
        assert self.db is not None      # thread mode
        try:
            if self.failed is not None:
                self.db.close_failed(t_end, reason or self.failed)
            else:
                self.db.close_run(t_end, state, reason, c)
        except WriteFailed as exc:
            self.failed = self.failed or str(exc)
