"""What ``/metrics`` says of one run, read from its journal at each scrape.

A scrape costs the run nothing per task: it reads what the journal's writer
(a process of its own) has already stored, and the master's live counters
where the scrape runs inside the master (:class:`Live`). Each query is bounded
by the tasks not ended yet, not by the run's size:

- tasks by state and name: one ``GROUP BY`` over the task rows (SQLite's scan
  of a 100,000-task journal takes a few ms);
- task durations (a histogram per name): incremental. ``_lo`` is the lowest
  task id not ended at the last scrape; the rows ended since, from ``_lo`` on,
  are added once (``_counted`` remembers those above ``_lo`` already added);
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
ENDED = ("DONE", "FAILED")


@dataclass
class Durations:
    """One task name's histogram: counts per bucket (not cumulative), the sum."""

    counts: list[int] = field(default_factory=lambda: [0] * (len(BUCKETS) + 1))
    total: float = 0.0

    def add(self, seconds: float) -> None:
        for i, le in enumerate(BUCKETS):
            if seconds <= le:
                self.counts[i] += 1
                break
        else:
            self.counts[-1] += 1
        self.total += seconds


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
        self._counted: set[int] = set()
        self._durations: dict[str, Durations] = {}
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
            tasks = {(self._names.get(s, "?"), st): n for s, st, n in j.db.execute(
                "SELECT spec, state, COUNT(*) FROM task_rows GROUP BY spec, state")}
            self._ended(j)
            nodes = j.nodes()
            slots = self.live.slots() if self.live is not None else self._slots(j, nodes)
            rd, wr = self._bytes(j)
        up = sum(1 for n in nodes if not n.get("t_lost"))
        rss, cpu = self._master(run)
        return Snapshot(
            run_id=str(run.get("run_id")), state=str(run.get("state")),
            version=str(run.get("version") or ""), t_start=run.get("t_start"),
            tasks=tasks, durations={k: Durations(list(v.counts), v.total)
                                    for k, v in self._durations.items()},
            slots=slots, nodes={"up": up, "lost": len(nodes) - up},
            bytes_read=rd, bytes_written=wr,
            backlog=self.live.backlog() if self.live is not None else None,
            master_rss=rss, master_cpu=cpu)

    def _specs(self, j: Journal) -> None:
        for sid, name in j.db.execute("SELECT id, name FROM specs WHERE id > ?",
                                      (max(self._names, default=0),)):
            self._names[sid] = name

    def _ended(self, j: Journal) -> None:
        """Adds the tasks ended since the last scrape to the histograms; moves ``_lo``."""
        lo, counted = self._lo, self._counted
        for tid, spec, t0, t1 in j.db.execute(
                "SELECT id, spec, t_start, t_end FROM task_rows WHERE id >= ? AND state IN "
                "('DONE', 'FAILED') AND t_end IS NOT NULL", (lo,)):
            if tid in counted:
                continue
            counted.add(tid)
            name = self._names.get(spec, "?")
            d = self._durations.get(name)
            if d is None:
                d = self._durations[name] = Durations()
            d.add(max(0.0, t1 - t0) if t0 else 0.0)
        row = j.db.execute("SELECT MIN(id) FROM task_rows WHERE id >= ? AND state NOT IN "
                           "('DONE', 'FAILED', 'CANCELLED', 'INTERRUPTED')", (lo,)).fetchone()
        if row and row[0] is not None:
            new_lo = int(row[0])
        else:
            top = j.db.execute("SELECT MAX(id) FROM task_rows").fetchone()
            new_lo = int(top[0] or 0) + 1 if top else lo
        if new_lo > lo:
            self._lo = new_lo
            self._counted = {t for t in counted if t >= new_lo}

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
