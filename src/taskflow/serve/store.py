"""The service's record of its runs: ``<workdir>/service.db`` (SQLite, WAL).

One row per run the service accepted, written before the run is answered
``201`` and on every change of its state, so a service started again (even
after SIGKILL) knows every earlier run: queued ones wait again, ones that
were running are ``interrupted``. What happened inside a run (tasks, logs,
nodes) is in the run's own journal, never copied here.
"""
from __future__ import annotations

import json
import sqlite3
import threading
import time
from typing import Any

QUEUED, RUNNING, FINISHED, FAILED, INTERRUPTED, CANCELLED = (
    "queued", "running", "finished", "failed", "interrupted", "cancelled")
STATES = (QUEUED, RUNNING, FINISHED, FAILED, INTERRUPTED, CANCELLED)
ENDED = frozenset({FINISHED, FAILED, INTERRUPTED, CANCELLED})

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT UNIQUE NOT NULL, state TEXT NOT NULL,
    priority INTEGER NOT NULL, t_submit REAL NOT NULL, t_start REAL, t_end REAL,
    script TEXT NOT NULL, args TEXT NOT NULL, options TEXT NOT NULL, dir TEXT NOT NULL,
    pid INTEGER, exit_code INTEGER, reason TEXT);
CREATE INDEX IF NOT EXISTS runs_state ON runs(state);
"""
COLUMNS = ("id", "state", "priority", "t_submit", "t_start", "t_end", "script", "args",
           "options", "dir", "pid", "exit_code", "reason")


class Store:
    """Thread-safe access to service.db (one connection, one lock)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.db = sqlite3.connect(path, check_same_thread=False, isolation_level=None,
                                  timeout=30)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=FULL")     # a 201 means the run is on disk
        self.db.executescript(SCHEMA)
        self.lock = threading.Lock()

    def close(self) -> None:
        with self.lock:
            self.db.close()

    def _row(self, r: Any) -> dict[str, Any]:
        d = dict(zip(COLUMNS, r))
        d["args"] = json.loads(d["args"])
        d["options"] = json.loads(d["options"])
        return d

    def add(self, rid: str, priority: int, script: str, args: list[str], options: dict[str, Any],
            run_dir: str) -> dict[str, Any]:
        with self.lock:
            self.db.execute(
                "INSERT INTO runs (id, state, priority, t_submit, script, args, options, dir) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (rid, QUEUED, priority, time.time(), script, json.dumps(args),
                 json.dumps(options), run_dir))
        got = self.get(rid)
        assert got is not None
        return got

    def get(self, rid: str) -> dict[str, Any] | None:
        with self.lock:
            r = self.db.execute(f"SELECT {', '.join(COLUMNS)} FROM runs WHERE id=?",
                                (rid,)).fetchone()
        return self._row(r) if r else None

    def runs(self, state: str | None = None, limit: int = 100, offset: int = 0
             ) -> tuple[list[dict[str, Any]], int]:
        where, args = ("WHERE state=?", (state,)) if state else ("", ())
        with self.lock:
            total = self.db.execute(f"SELECT COUNT(*) FROM runs {where}", args).fetchone()[0]
            rows = self.db.execute(
                f"SELECT {', '.join(COLUMNS)} FROM runs {where} ORDER BY seq LIMIT ? OFFSET ?",
                (*args, limit, offset)).fetchall()
        return [self._row(r) for r in rows], total

    def queued(self) -> list[dict[str, Any]]:
        """Queued runs in the order they start: higher priority first, then older."""
        with self.lock:
            rows = self.db.execute(f"SELECT {', '.join(COLUMNS)} FROM runs WHERE state=? "
                                   f"ORDER BY priority DESC, seq", (QUEUED,)).fetchall()
        return [self._row(r) for r in rows]

    def count(self, state: str) -> int:
        with self.lock:
            n: int = self.db.execute("SELECT COUNT(*) FROM runs WHERE state=?",
                                     (state,)).fetchone()[0]
        return n

    def update(self, rid: str, **fields: Any) -> None:
        if not fields:
            return
        sets = ", ".join(f"{k}=?" for k in fields)
        with self.lock:
            self.db.execute(f"UPDATE runs SET {sets} WHERE id=?", (*fields.values(), rid))

    def set_state(self, rid: str, state: str, only_from: tuple[str, ...] = (), **fields: Any
                  ) -> bool:
        """Change a run's state (when it is in one of ``only_from``); True if it changed."""
        cols = {"state": state, **fields}
        sets = ", ".join(f"{k}=?" for k in cols)
        sql = f"UPDATE runs SET {sets} WHERE id=?"
        args: tuple[Any, ...] = (*cols.values(), rid)
        if only_from:
            sql += f" AND state IN ({', '.join('?' * len(only_from))})"
            args += only_from
        with self.lock:
            return self.db.execute(sql, args).rowcount == 1
