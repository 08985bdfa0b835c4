"""Server-sent events: what changed in a run, pushed to the page as it happens.

One stream per open page. It reads the run's journal (SQLite, WAL) every
:data:`TICK` seconds, but only when the writer committed something since
(``PRAGMA data_version``), and sends what differs from what this page was
sent before: changed and new task rows, counts, nodes, new load samples.
The page never re-fetches the task list.

Which rows may have changed: every task from the lowest id not yet in a
final state on (ids grow in submission order, and a final state is final,
save for a task recomputed after its node was lost: a full pass every
:data:`RESYNC` seconds catches those).

Bounds: at most :data:`MAX_STREAMS` streams at once per server (each holds a
thread and an SQLite connection; the next gets HTTP 503), a stream keeps
one small tuple per task of its run, an update carries at most
:data:`MAX_ROWS` task rows (a page of a larger run shows the newest, and
the counts), and a heartbeat every :data:`HEARTBEAT` s lets the server see
a page that went away.
"""
from __future__ import annotations

import json
import threading
import time
from typing import Any, Callable, Iterator

from ..journal.reader import Journal, slots_of

TICK = 0.5             # s between looks at the journal
HEARTBEAT = 5.0        # s between comments on a quiet stream
RESYNC = 30.0          # s between full passes over the tasks
MAX_STREAMS = 16
MAX_ROWS = 2000        # task rows per update; a page keeps every task up to DETAIL_MAX
DETAIL_MAX = 2000      # tasks: up to this the page holds every task (table, Gantt, DAG)
LOG_BATCH = 2000       # log lines per update of a log stream
FINAL = ("DONE", "FAILED", "CANCELLED", "INTERRUPTED")
ROW_KEYS = ("id", "name", "state", "node", "t_submit", "t_dispatch", "t_start", "t_end",
            "attempts", "params", "error")


def sse(event: str, data: Any) -> str:
    """One server-sent event."""
    return f"event: {event}\ndata: {json.dumps(data, default=str, separators=(',', ':'))}\n\n"


class Slots:
    """Counts the open streams; refuses one beyond :data:`MAX_STREAMS`."""

    def __init__(self, limit: int = MAX_STREAMS) -> None:
        self.limit = limit
        self.open = 0
        self._lock = threading.Lock()
        self.stopping = threading.Event()

    def take(self) -> bool:
        with self._lock:
            if self.open >= self.limit:
                return False
            self.open += 1
            return True

    def give(self) -> None:
        with self._lock:
            self.open -= 1


def _row(t: dict[str, Any], held: dict[int, list[tuple[str, int]]]) -> dict[str, Any]:
    r = {k: t.get(k) for k in ROW_KEYS}
    slots = slots_of(t, held)
    if slots != [(t.get("node") or "?", 1)]:
        r["held"] = slots
    return r


def _sig(t: dict[str, Any]) -> tuple[Any, ...]:
    return (t["state"], t["node"], t["t_dispatch"], t["t_start"], t["t_end"], t["attempts"])


class RunStream:
    """The updates of one run for one page (a generator of SSE text)."""

    def __init__(self, open_journal: Callable[[], Journal], slots: Slots,
                 colours: Callable[[list[str]], dict[str, str]]) -> None:
        self.open_journal = open_journal
        self.slots = slots
        self.colours = colours
        self.known: dict[int, tuple[Any, ...]] = {}
        self.low = 0                # lowest task id not known to be final
        self.sample_row = 0
        self.nodes_sig: tuple[Any, ...] = ()
        self.run_sig: tuple[Any, ...] = ()
        self.names: set[str] = set()

    def events(self) -> Iterator[str]:
        j = self.open_journal()
        try:
            yield "retry: 2000\n\n"
            version = j.data_version()
            yield sse("snapshot", self._update(j, full=True, first=True))
            last_full = last_sent = time.monotonic()
            while True:
                state = self.run_sig[0]
                if state not in ("running", "unknown") and version == j.data_version():
                    yield sse("end", {"state": state})      # over, and all of it was sent
                    return
                if self.slots.stopping.wait(TICK):
                    return
                now = time.monotonic()
                v = j.data_version()
                full = now - last_full > RESYNC
                if v == version and not full and j.run().get("state") == state:
                    if now - last_sent > HEARTBEAT:
                        last_sent = now
                        yield ": quiet\n\n"
                    continue
                version = v
                if full:
                    last_full = now
                up = self._update(j, full=full)
                last_sent = now
                if up:
                    yield sse("update", up)
        finally:
            j.close()

    def _update(self, j: Journal, full: bool = False, first: bool = False) -> dict[str, Any]:
        """What changed since the last update (everything on the first)."""
        out: dict[str, Any] = {}
        run = j.run()
        run_sig = (run.get("state"), run.get("t_end"))
        if first or run_sig != self.run_sig:
            self.run_sig = run_sig
            out["run"] = run
        rows = j.tasks(since_id=None if full else self.low)
        held = j.placements() if rows else {}
        changed = []
        low = None
        known = self.known
        for t in rows:
            sig = _sig(t)
            if known.get(t["id"]) != sig:
                known[t["id"]] = sig
                changed.append(t)
            if low is None and t["state"] not in FINAL:
                low = t["id"]
        if rows:
            self.low = low if low is not None else rows[-1]["id"] + 1
        if changed or first:
            out["counts"] = j.counts()
            out["by_name"] = j.counts_by_name()
            names = set(out["by_name"])
            if first or names - self.names:
                self.names = names
                out["colours"] = self.colours(sorted(names))
            total = out["counts"]["total"]
            out["detail"] = total <= DETAIL_MAX
            if len(changed) > MAX_ROWS:      # a big run: the newest, the running first
                changed.sort(key=lambda t: (t["state"] != "RUNNING", -t["id"]))
                changed = changed[:MAX_ROWS]
                out["rows_cut"] = True
            out["tasks"] = [_row(t, held) for t in changed]
            if first and out["detail"]:
                out["edges"] = j.edges()
        nodes = j.nodes()
        nsig = tuple((n["name"], n["t_join"], n["t_lost"]) for n in nodes)
        if first or nsig != self.nodes_sig:
            self.nodes_sig = nsig
            out["nodes"] = nodes
        samples = j.samples_since(self.sample_row)
        if samples:
            self.sample_row = samples[-1]["rowid"]
            out["samples"] = samples
        if out:
            out["now"] = time.time()
        return out


def log_events(open_journal: Callable[[], Journal], slots: Slots, task: int,
               after: int = 0) -> Iterator[str]:
    """A task's output lines as they come, then where the rest of its output is."""
    j = open_journal()
    try:
        yield "retry: 2000\n\n"
        sent = 0
        last_sent = time.monotonic()
        while True:
            # The state before the lines: a task's lines are committed with or before its
            # final state, so a final state read first means no line of it is still to come.
            t = j.task(task)
            run_over = j.run().get("state") not in ("running", "unknown")
            lines = j.logs(task=task, after=after, limit=LOG_BATCH)
            if lines:
                after = lines[-1]["id"]
                sent += len(lines)
                last_sent = time.monotonic()
                yield sse("lines", lines)
                if len(lines) == LOG_BATCH:
                    continue
            # a task not in the journal yet (its row waits up to the writer's HOLD) is
            # waited for while the run goes on, not ended as one without output
            if (t is not None and t["state"] in FINAL and not lines) or run_over:
                if t is not None and lines:
                    continue                    # one more look: lines written with the end
                yield sse("end", {"lines": sent, "state": t and t["state"],
                                  "streams": (t or {}).get("streams") or {},
                                  "log_files": (t or {}).get("log_files") or [],
                                  "error": (t or {}).get("traceback") or (t or {}).get("error")})
                return
            if slots.stopping.wait(TICK):
                return
            if time.monotonic() - last_sent > HEARTBEAT:
                last_sent = time.monotonic()
                yield ": quiet\n\n"
    finally:
        j.close()
