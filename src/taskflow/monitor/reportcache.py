"""The report call's answers, kept per run until its journal changes.

A run's report figures (:func:`taskflow.observe.report.figures`) take one
pass over every task: a second or more for 100,000 tasks. A page asks for
them again and again, and an ended run's journal never changes, so the
answer is kept with the journal's state it was made from (the reading
connection's ``PRAGMA data_version``, which changes with every commit of
another connection, and the run's state): the same state gives the same
bytes without a new pass, a commit a new pass. The cache holds one
connection and one answer per run for at most :data:`RUNS` runs (the least
recently asked is dropped), and one pass per run at a time: callers of the
same run wait for the pass under way rather than start another.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any, Callable

from ..journal.reader import Journal

RUNS = 4         # runs whose answer is kept


class _Entry:
    __slots__ = ("journal", "inode", "key", "body", "lock", "closed")

    def __init__(self, journal: Journal, inode: int) -> None:
        self.journal = journal
        self.inode = inode                      # a journal made again is another journal
        self.key: tuple[int, str] | None = None
        self.body = b""
        self.lock = threading.Lock()
        self.closed = False

    def close(self) -> None:
        with self.lock:                 # (not while a pass reads it)
            self.closed = True
            self.journal.close()


class ReportCache:
    """``get(run_dir)``: the report's JSON bytes for the journal's present state."""

    def __init__(self, make: Callable[[Journal], bytes], runs: int = RUNS) -> None:
        self.make = make            # a journal -> the answer's bytes
        self.runs = runs
        self.passes = 0             # answers made (not taken from the cache)
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def _entry(self, run_dir: str) -> _Entry:
        journal: Journal | None = Journal(run_dir)      # RunNotFound / RecordDamaged: the caller's answer
        inode = os.stat(journal.path).st_ino          # type: ignore[union-attr]
        gone: list[_Entry] = []
        with self._lock:
            e = self._entries.get(run_dir)
            if e is not None and e.inode == inode:
                self._entries.move_to_end(run_dir)
            else:
                if e is not None:
                    gone.append(self._entries.pop(run_dir))
                e = self._entries[run_dir] = _Entry(journal, inode)  # type: ignore[arg-type]
                journal = None          # (kept)
                while len(self._entries) > self.runs:
                    gone.append(self._entries.popitem(last=False)[1])
        if journal is not None:
            journal.close()
        for old in gone:                # outside the cache's lock: a pass may be under way
            old.close()
        return e

    def get(self, run_dir: str) -> bytes:
        """The answer for the run's journal as it is now."""
        while True:
            e = self._entry(run_dir)
            with e.lock:
                if e.closed:            # dropped while this caller waited: take a fresh one
                    continue
                key = e.journal.state_key()
                if key != e.key:
                    e.body = self.make(e.journal)
                    e.key = key         # (the state read before the pass: a commit during it
                    self.passes += 1    #  changes the key again, so the next call makes anew)
                return e.body

    def close(self) -> None:
        with self._lock:
            gone = list(self._entries.values())
            self._entries.clear()
        for e in gone:
            e.close()


def json_bytes(dumps: Callable[[Any], str]) -> Callable[[Journal], bytes]:
    """A maker for :class:`ReportCache`: the report's figures as JSON by ``dumps``."""
    def make(j: Journal) -> bytes:
        from ..observe.report import figures      # (not at start-up: the master's monitor)
        return dumps(figures(j)).encode()
    return make
