"""A run's ``journal.db`` opened for reading: the connection, its queries' error words, and
read transactions. :class:`~.reader.Journal` builds on it.

A journal that cannot be read (damaged, not a database, a full disk under its
shared-memory file) raises :class:`~taskflow.errors.RecordDamaged`, one line naming the
file and where the rest of the run is.
"""
from __future__ import annotations

import os
import sqlite3
from contextlib import contextmanager
from typing import Any, Iterator, TypeVar

from ..errors import RecordDamaged
from ..errors import RunNotFound
from .schema import JOURNAL_NAME

_J = TypeVar("_J", bound="JournalFile")


def damaged(path: str, exc: BaseException) -> RecordDamaged:
    """The error for a journal at ``path`` that cannot be read (``exc``: SQLite's word)."""
    run_dir = os.path.dirname(path)
    jobs = os.path.join(run_dir, "jobs")
    rest = f"; programs' output files are in {jobs}" if os.path.isdir(jobs) else ""
    return RecordDamaged(f"{path} is damaged ({exc}): the run's task rows and logs in it cannot "
                         f"be read (`sqlite3 {path} .recover` may save some); the run's other "
                         f"files are in {run_dir}{rest}")


class JournalFile:
    """One run's journal file, open for reading."""

    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir
        self.path = os.path.join(run_dir, JOURNAL_NAME)
        if not os.path.isfile(self.path):
            raise RunNotFound(f"{run_dir} has no {JOURNAL_NAME}")
        try:
            self.db = sqlite3.connect(self.path, check_same_thread=False, timeout=10)
            self.db.row_factory = sqlite3.Row
            self.db.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.DatabaseError as exc:
            raise damaged(self.path, exc) from None

    def close(self) -> None:
        self.db.close()

    def require_tables(self: _J) -> _J:
        """Self, or :class:`RecordDamaged` when the file has none of a journal's tables
        (empty, or another SQLite file): for the commands that would print nothing."""
        if not self._rows("SELECT 1 FROM sqlite_master WHERE type='table' AND name='run'"):
            size = os.path.getsize(self.path) if os.path.exists(self.path) else 0
            raise RecordDamaged(f"{self.path} has no journal tables ({size} bytes): it is not "
                                f"a run's journal, or its run had only begun to write it; "
                                f"the run's other files are in {self.run_dir}")
        return self

    def __enter__(self: _J) -> _J:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _rows(self, sql: str, args: tuple[Any, ...] = ()) -> list[Any]:
        """Rows of ``sql``; none while the writer has not made the tables yet."""
        try:
            return self.db.execute(sql, args).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return []
            if "locked" in str(exc):        # (a writer holds it longer than the wait)
                raise
            raise damaged(self.path, exc) from None
        except sqlite3.DatabaseError as exc:
            raise damaged(self.path, exc) from None

    def _all(self, sql: str, args: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
        return [dict(r) for r in self._rows(sql, args)]

    def _each(self, sql: str, args: tuple[Any, ...] = ()) -> Iterator[Any]:
        """Rows of ``sql`` one at a time (a whole run's rows are never in memory at once)."""
        try:
            cur = self.db.execute(sql, args)
            while True:
                rows = cur.fetchmany(1000)
                if not rows:
                    return
                yield from rows
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return
            if "locked" in str(exc):
                raise
            raise damaged(self.path, exc) from None
        except sqlite3.DatabaseError as exc:
            raise damaged(self.path, exc) from None

    @contextmanager
    def snapshot(self: _J) -> Iterator[_J]:
        """Reads inside see one state of the journal (one read transaction), whatever the
        writer commits meanwhile: figures made of several queries agree with each other."""
        self.db.execute("BEGIN")
        try:
            yield self
        finally:
            self.db.execute("COMMIT")
