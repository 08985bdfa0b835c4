"""Server-sent event streams over a run's journal: its events, and a task's followed logs.

Both read the journal the run's own process writes (SQLite, WAL) every
``POLL`` seconds; no run process talks to the service. A stream ends with an
``end`` event once the run has ended and the journal has nothing more, and
sends a comment every ``KEEPALIVE`` seconds so a proxy keeps it open and a
client that went away is noticed.

Memory per stream: the log stream keeps one cursor (log ids only grow); the
event stream keeps the last state of the tasks above the highest id below
which every task has ended, so a long run's finished tasks are forgotten.
"""
from __future__ import annotations

import asyncio
import json
import time
from typing import Any, AsyncIterator, Awaitable, Callable

import anyio

from ..errors import RecordDamaged
from ..journal.reader import Journal
from . import store as S

POLL = 0.25           # s between looks at the journal
KEEPALIVE = 15.0      # s between comments on a quiet stream
BATCH = 2000          # rows read per look
TERMINAL = frozenset({"DONE", "FAILED", "CANCELLED", "INTERRUPTED"})
_TIME_OF = {"SUBMITTED": "t_submit", "READY": "t_submit", "DISPATCHED": "t_dispatch",
            "RUNNING": "t_start", "DONE": "t_end", "FAILED": "t_end", "CANCELLED": "t_end"}


def sse(event: str, data: Any, eid: int | str | None = None) -> bytes:
    head = f"id: {eid}\n" if eid is not None else ""
    return f"{head}event: {event}\ndata: {json.dumps(data, default=str)}\n\n".encode()


class TaskTracker:
    """Which task states a stream has already sent (see the module docstring)."""

    def __init__(self) -> None:
        self.floor = 0                      # every task with id <= floor has ended and been sent
        self.seen: dict[int, str] = {}

    def poll(self, j: Journal) -> list[dict[str, Any]]:
        rows = j._all("SELECT id, name, state, node, t_submit, t_dispatch, t_start, t_end, "
                      "attempts, exit_code, error FROM tasks WHERE id > ? ORDER BY id",
                      (self.floor,))
        out = []
        for r in rows:
            tid, state = r["id"], r["state"]
            if self.seen.get(tid) != state:
                self.seen[tid] = state
                out.append({"task": tid, "name": r["name"], "state": state, "node": r["node"],
                            "t": r.get(_TIME_OF.get(state, "t_submit")),
                            "attempts": r["attempts"], "exit_code": r["exit_code"],
                            "error": r["error"]})
        while self.seen.get(self.floor + 1) in TERMINAL:
            del self.seen[self.floor + 1]
            self.floor += 1
        return out


Disconnected = Callable[[], Awaitable[bool]]
RunInfo = Callable[[], dict[str, Any] | None]
OpenJournal = Callable[[], Journal | None]


async def run_events(run_info: RunInfo, open_journal: OpenJournal,
                     disconnected: Disconnected) -> AsyncIterator[bytes]:
    """``run`` events (state and counts) and ``task`` events (state changes) until the end."""
    tracker = TaskTracker()
    journal: Journal | None = None
    last_state = None
    last_beat = time.monotonic()
    ended_seen = False
    try:
        while not await disconnected():
            row, journal = await _look(run_info, open_journal, journal)
            if row is None:
                yield sse("end", {"reason": "the run is gone"})
                return
            events: list[dict[str, Any]] = []
            if journal is not None:
                events = await anyio.to_thread.run_sync(tracker.poll, journal)
            for ev in events:
                yield sse("task", ev)
            if row["state"] != last_state:
                if row["state"] in S.ENDED and last_state in (None, "queued") \
                        and row.get("t_start") is not None:
                    # it started and ended between two looks: it was running all the same
                    yield sse("run", {"id": row["id"], "state": "running", "counts": {},
                                      "exit_code": None, "reason": None})
                last_state = row["state"]
                counts = await anyio.to_thread.run_sync(journal.counts) if journal else {}
                yield sse("run", {"id": row["id"], "state": row["state"], "counts": counts,
                                  "exit_code": row["exit_code"], "reason": row["reason"]})
            if row["state"] in S.ENDED:
                if ended_seen:             # one more look after the end: then nothing is left
                    counts = await anyio.to_thread.run_sync(journal.counts) if journal else {}
                    yield sse("end", {"id": row["id"], "state": row["state"], "counts": counts})
                    return
                ended_seen = True
            if time.monotonic() - last_beat > KEEPALIVE:
                last_beat = time.monotonic()
                yield b": keepalive\n\n"
            await asyncio.sleep(POLL)
    except RecordDamaged as exc:        # the run's journal cannot be read: said, and the end
        yield sse("end", {"reason": str(exc), "damaged": True})
    finally:
        if journal is not None:
            journal.close()


async def task_logs(run_info: RunInfo, open_journal: OpenJournal, disconnected: Disconnected,
                    tid: int, levels: list[str] | None, after: int) -> AsyncIterator[bytes]:
    """``log`` events (one per line, id = the line's id) until the task and the run ended."""
    journal: Journal | None = None
    cursor = after
    last_beat = time.monotonic()
    done_looks = 0
    try:
        while not await disconnected():
            row, journal = await _look(run_info, open_journal, journal)
            if row is None:
                yield sse("end", {"reason": "the run is gone"})
                return
            lines: list[dict[str, Any]] = []
            task = None
            if journal is not None:
                lines = await anyio.to_thread.run_sync(_lines, journal, tid, levels, cursor)
                task = await anyio.to_thread.run_sync(journal.task, tid)
            for ln in lines:
                cursor = ln["id"]
                yield sse("log", {"id": ln["id"], "t": ln["t"], "level": ln["level"],
                                  "node": ln["node"], "line": ln["line"]}, ln["id"])
            if len(lines) == BATCH:
                continue
            over = row["state"] in S.ENDED or (task is not None and task["state"] in TERMINAL)
            done_looks = done_looks + 1 if over and not lines else 0
            if done_looks >= 2:           # lines of an ended task may follow its end by a batch
                yield sse("end", {"task": tid, "state": task["state"] if task else None,
                                  "last_id": cursor})
                return
            if time.monotonic() - last_beat > KEEPALIVE:
                last_beat = time.monotonic()
                yield b": keepalive\n\n"
            await asyncio.sleep(POLL if done_looks == 0 else 4 * POLL)
    except RecordDamaged as exc:
        yield sse("end", {"reason": str(exc), "damaged": True})
    finally:
        if journal is not None:
            journal.close()


async def _look(run_info: RunInfo, open_journal: OpenJournal,
                journal: Journal | None) -> tuple[Any, Journal | None]:
    """The run's row (None: gone) and its journal, opened on the first look that finds it."""
    row = await anyio.to_thread.run_sync(run_info)
    if row is not None and journal is None:
        journal = await anyio.to_thread.run_sync(open_journal)
    return row, journal


def _lines(j: Journal, tid: int, levels: list[str] | None, after: int) -> list[dict[str, Any]]:
    return j.logs(task=tid, levels=levels, after=after, limit=BATCH)


async def console(run_info: RunInfo, read: Callable[[int], tuple[list[str], int, int]],
                  disconnected: Disconnected, offset: int) -> AsyncIterator[bytes]:
    """``line`` events (id = the byte offset after the line) of the run's console, until
    the run has ended and nothing more was written."""
    last_beat = time.monotonic()
    done_looks = 0
    while not await disconnected():
        row = await anyio.to_thread.run_sync(run_info)
        if row is None:
            yield sse("end", {"reason": "the run is gone"})
            return
        lines, after, size = await anyio.to_thread.run_sync(read, offset)
        for ln in lines:
            yield sse("line", {"line": ln})
        if lines:
            yield sse("offset", {"offset": after}, after)
        offset = after
        if after < size and lines:
            continue                    # more is there already
        over = row["state"] in S.ENDED
        done_looks = done_looks + 1 if over and not lines else 0
        if done_looks >= 2:             # (its last writes may follow the end by a look)
            yield sse("end", {"state": row["state"], "offset": offset})
            return
        if time.monotonic() - last_beat > KEEPALIVE:
            last_beat = time.monotonic()
            yield b": keepalive\n\n"
        await asyncio.sleep(POLL if done_looks == 0 else 4 * POLL)
