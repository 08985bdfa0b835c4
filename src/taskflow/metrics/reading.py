"""What ``/metrics`` says of one run, read from its journal at each scrape.

A scrape costs the run nothing per task: it reads what the journal's writer
(a process of its own) has already stored, and the master's live counters
where the scrape runs inside the master (:class:`Live`). Each query is bounded
by the tasks not ended yet, not by the run's size:

- tasks by state and name, and task durations (a histogram per name), counted
  by SQLite, not row by row in Python. ``_lo`` is the lowest task id not ended,
  or with no row yet, at the last scrape: every task below it has its row and has
  ended, and is counted once, when ``_lo`` moves past it (:meth:`RunReading._ended`);
  the tasks from ``_lo`` on are counted afresh at each scrape. (A row goes in when
  its task ends or after the writer has held it a while, so it may come after the
  rows of later tasks.) So a scrape reads the rows of the tasks
  that ended since the last one and of those not ended (a ``GROUP BY`` over all
  the rows took ~50 ms at 100,000 tasks). A task that runs long from the start
  holds ``_lo`` back, and the scrapes then count every row after it: still
  right, slower. A task that ended and runs again (its value lost with its
  node) below ``_lo`` stays counted as ended;
- slots in use per node: the running tasks, from ``_lo`` on (the master's own
  count where it is live);
- bytes moved: sums over the measured tasks' ``usage`` rows;
- nodes by state: the ``nodes`` table (joined and not lost: up);
- the master's resident memory and CPU time (psutil, where it runs on this
  host), and the journal's backlog (rows the bus has not handed to the writer
  yet: live only).
"""
from __future__ import annotations

import json
import os
import socket
import sqlite3
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..journal.reader import Journal

if TYPE_CHECKING:
    from ..console.view import RunView

# upper bounds (s) of the duration histogram's buckets (+Inf follows)
BUCKETS = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0,
           3600.0)
TIMED = ("DONE", "FAILED")                               # their run time is a duration
FINAL = "('DONE', 'FAILED', 'CANCELLED', 'INTERRUPTED')"   # (SQL) states a task ends in


@dataclass
class Durations:
    """One task name's histogram: counts per bucket (not cumulative; the last: above
    the last bound), the sum of the durations."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))
    total: float = 0.0

    def plus(self, other: "Durations") -> "Durations":
        return Durations([a + b for a, b in zip(self.counts, other.counts)],
                         self.total + other.total)


# per (spec, state, bucket) over a range of task ids: the count and the durations' sum
# (durations of the tasks that ended DONE or FAILED; the others count in bucket 0)
_DURATION = ("CASE WHEN t_start > 0 AND t_end > t_start AND state IN ('DONE', 'FAILED') "
             "THEN t_end - t_start ELSE 0.0 END")
_BUCKET = ("CASE " + " ".join(f"WHEN d <= {le!r} THEN {i}" for i, le in enumerate(BUCKETS))
           + f" ELSE {len(BUCKETS)} END")
_AGGREGATE = (f"SELECT spec, state, {_BUCKET} AS b, COUNT(*), SUM(d) FROM "
              f"(SELECT spec, state, {_DURATION} AS d FROM task_rows WHERE id >= ? AND id < ?) "
              f"GROUP BY spec, state, b")


@dataclass
class Snapshot:
    """One scrape's figures of one run."""

    run_id: str
    state: str
    version: str
    t_start: float | None
    tasks: dict[tuple[str, str], int]               # (name, state) -> count
    durations: dict[str, Durations]
    slots: dict[str, tuple[int, int]]                # node -> (used, free)
    nodes: dict[str, int]                            # up | lost -> count
    bytes_read: int
    bytes_written: int
    backlog: int | None
    master_rss: int | None
    master_cpu: float | None


class Live:
    """What only the master knows (the scrape runs in it): slots in use per node, the
    journal's backlog, this process's memory and CPU."""

    def __init__(self, rt: RunView) -> None:
        self.rt = rt

    def slots(self) -> dict[str, tuple[int, int]]:
        out: dict[str, tuple[int, int]] = {}
        for n in list(self.rt.nodes):
            if n.alive:
                used = min(n.used, n.slots)
                out[n.name] = (used, n.slots - used)
        return out

    def backlog(self) -> int:
        return self.rt.bus.backlog()


class RunReading:
    """Reads one run's journal scrape after scrape (one connection; thread-safe)."""

    def __init__(self, run_dir: str, live: Live | None = None) -> None:
        self.run_dir = run_dir
        self.live = live
        self._j: Journal | None = None
        self._lock = threading.Lock()
        self._lo = 1
        self._durations: dict[str, Durations] = {}
        self._final: dict[tuple[str, str], int] = {}   # (name, state) -> ended tasks counted
        self._names: dict[int, str] = {}          # spec id -> task name
        self._proc: Any = None

    def close(self) -> None:
        with self._lock:
            if self._j is not None:
                self._j.close()
                self._j = None

    def read(self) -> Snapshot:
        """The run now; a journal whose tables are not made yet reads as no task."""
        with self._lock:
            if self._j is None:
                self._j = Journal(self.run_dir)
            try:
                return self._read(self._j)
            except sqlite3.OperationalError as exc:
                if "no such table" not in str(exc):
                    raise
                return Snapshot(os.path.basename(self.run_dir), "starting", "", None, {}, {},
                                {}, {"up": 0, "lost": 0}, 0, 0, None, None, None)

    def _read(self, j: Journal) -> Snapshot:
        with j.snapshot():
            run = j.run()
            self._specs(j)
            tasks, durations = self._ended(j)
            nodes = j.nodes()
            slots = self.live.slots() if self.live is not None else self._slots(j, nodes)
            rd, wr = self._bytes(j)
        up = sum(1 for n in nodes if not n.get("t_lost"))
        rss, cpu = self._master(run)
        return Snapshot(
            run_id=str(run.get("run_id")), state=str(run.get("state")),
            version=str(run.get("version") or ""), t_start=run.get("t_start"),
            tasks=tasks, durations=durations,
            slots=slots, nodes={"up": up, "lost": len(nodes) - up},
            bytes_read=rd, bytes_written=wr,
            backlog=self.live.backlog() if self.live is not None else None,
            master_rss=rss, master_cpu=cpu)

    def _specs(self, j: Journal) -> None:
        for sid, name in j.db.execute("SELECT id, name FROM specs WHERE id > ?",
                                      (max(self._names, default=0),)):
            self._names[sid] = name

    def _aggregate(self, j: Journal, lo: int, hi: int
                   ) -> tuple[dict[tuple[str, str], int], dict[str, Durations]]:
        """Counts by (name, state) and the durations by name of the tasks ``lo <= id < hi``."""
        tasks: dict[tuple[str, str], int] = {}
        durations: dict[str, Durations] = {}
        for spec, state, bucket, n, total in j.db.execute(_AGGREGATE, (lo, hi)):
            name = self._names.get(spec, "?")
            tasks[(name, state)] = tasks.get((name, state), 0) + n
            if state in TIMED:
                d = durations.get(name)
                if d is None:
                    d = durations[name] = Durations()
                d.counts[bucket] += n
                d.total += total or 0.0
        return tasks, durations

    def _ended(self, j: Journal) -> tuple[dict[tuple[str, str], int], dict[str, Durations]]:
        """Moves ``_lo`` past the tasks ended since the last scrape (counting them once);
        returns the counts and durations of the whole run."""
        lo = self._lo
        row = j.db.execute("SELECT MIN(id) FROM task_rows WHERE id >= ? AND state NOT IN "
                           f"{FINAL}", (lo,)).fetchone()
        if row and row[0] is not None:
            new_lo = int(row[0])
        else:
            top = j.db.execute("SELECT MAX(id) FROM task_rows").fetchone()
            new_lo = max(lo, int(top[0] or 0) + 1) if top else lo
        if new_lo > lo:
            new_lo = _first_missing(j, lo, new_lo)
        if new_lo > lo:
            tasks, durations = self._aggregate(j, lo, new_lo)
            for key, n in tasks.items():
                self._final[key] = self._final.get(key, 0) + n
            for name, d in durations.items():
                self._durations[name] = self._durations[name].plus(d) \
                    if name in self._durations else d
            self._lo = new_lo
        tasks, durations = self._aggregate(j, self._lo, 2**62)
        for key, n in self._final.items():
            tasks[key] = tasks.get(key, 0) + n
        for name, d in self._durations.items():
            durations[name] = durations[name].plus(d) if name in durations else d
        return tasks, durations

    def _slots(self, j: Journal, nodes: list[dict[str, Any]]) -> dict[str, tuple[int, int]]:
        """Slots in use per node from the journal: its running tasks' computing units."""
        used: dict[str, int] = {}
        for node, constraints, n in j.db.execute(
                "SELECT r.node, s.constraints, COUNT(*) FROM task_rows r JOIN specs s ON "
                "s.id = r.spec WHERE r.id >= ? AND r.state = 'RUNNING' GROUP BY r.node, r.spec",
                (self._lo,)):
            try:
                units = int(json.loads(constraints or "{}").get("computing_units") or 1)
            except (ValueError, TypeError, AttributeError):
                units = 1
            used[node] = used.get(node, 0) + units * n
        out = {}
        for n in nodes:
            if not n.get("t_lost"):
                total = int(n.get("slots") or 0)
                u = min(used.get(n["name"], 0), total)
                out[n["name"]] = (u, total - u)
        return out

    def _bytes(self, j: Journal) -> tuple[int, int]:
        try:
            row = j.db.execute("SELECT SUM(rchar), SUM(wchar) FROM usage").fetchone()
        except Exception:  # noqa: BLE001 - a journal from before the bytes were kept
            return 0, 0
        return int(row[0] or 0), int(row[1] or 0)

    def _master(self, run: dict[str, Any]) -> tuple[int | None, float | None]:
        """The run's master process: resident bytes, CPU seconds (None: not on this host,
        or it ended)."""
        pid = run.get("pid")
        if run.get("state") != "running" or not pid or run.get("hostname") != socket.gethostname():
            return None, None
        import psutil
        try:
            if self._proc is None or self._proc.pid != pid:
                self._proc = psutil.Process(pid) if pid != os.getpid() else psutil.Process()
            with self._proc.oneshot():
                t = self._proc.cpu_times()
                return int(self._proc.memory_info().rss), float(t.user + t.system)
        except psutil.Error:
            return None, None


class Readings:
    """The :class:`RunReading` of each run scraped, at most :data:`KEPT` (the oldest
    scraped closes first); ``live``: the master's own run, when the server runs in it."""

    KEPT = 8

    def __init__(self, live: tuple[str, Live] | None = None) -> None:
        self.live = live
        self._by_dir: dict[str, RunReading] = {}
        self._lock = threading.Lock()

    def of(self, run_dir: str) -> RunReading:
        run_dir = os.path.abspath(run_dir)
        with self._lock:
            r = self._by_dir.pop(run_dir, None)
            if r is None:
                live = self.live[1] if self.live and os.path.abspath(self.live[0]) == run_dir \
                    else None
                r = RunReading(run_dir, live)
            self._by_dir[run_dir] = r          # (the most recent last)
            while len(self._by_dir) > self.KEPT:
                old = next(iter(self._by_dir))
                self._by_dir.pop(old).close()
            return r

    def close(self) -> None:
        with self._lock:
            for r in self._by_dir.values():
                r.close()
            self._by_dir.clear()


def _first_missing(j: Journal, lo: int, hi: int) -> int:
    """The first task id of ``lo <= id < hi`` that has no row yet, else ``hi``.

    A row goes into the journal when its task ends or after the writer has held it
    ``JournalDB.HOLD`` seconds, so a task's row may come after those of later tasks
    that ended sooner; ``_lo`` stops there, or that task would never be counted."""
    (n,) = j.db.execute("SELECT COUNT(*) FROM task_rows WHERE id >= ? AND id < ?",
                        (lo, hi)).fetchone()
    if n == hi - lo:
        return hi
    if j.db.execute("SELECT 1 FROM task_rows WHERE id = ?", (lo,)).fetchone() is None:
        return lo
    (gap,) = j.db.execute(
        "SELECT MIN(t.id) + 1 FROM task_rows t WHERE t.id >= ? AND t.id < ? AND NOT EXISTS "
        "(SELECT 1 FROM task_rows u WHERE u.id = t.id + 1)", (lo, hi - 1)).fetchone()
    return min(hi, int(gap)) if gap is not None else hi
