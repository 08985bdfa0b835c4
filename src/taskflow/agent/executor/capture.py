"""A Python task's output, captured in its executor: ``sys.stdout`` and ``sys.stderr``
while it runs.

Lines are kept with their times and travel with the task's result, cut into
journal rows and with carriage returns handled as :mod:`.loglines` says; a long
task's lines are sent on while it runs (:func:`send_lines`).
"""
from __future__ import annotations

import io
import os
import threading
import time
from _thread import get_ident
from typing import Any

from ...wire import messages as M
from ...wire import protocol as P
from .loglines import ROW_MAX, TASK_BYTES, Lines, keep_file

INLINE_LOG_LINES = 10000   # lines kept per task; the rest are counted and dropped

class Current:
    """The task an executor runs now, shared by its two captures.

    Per task the executor sets two slots; the log list is made only when
    the task writes a line (most write none), and ``wrote`` tells the loop
    whether the captures need an end-of-task flush.
    """

    __slots__ = ("tid", "t0", "logs", "wrote", "held", "total")

    def __init__(self) -> None:
        self.tid = 0
        self.t0 = 0.0
        self.logs: list[M.LineWire] | None = None
        self.wrote = False       # a capture was written to since the last end_task
        self.held = 0            # characters in logs not sent yet
        self.total = 0           # characters of the task's lines for the journal so far

    def lines(self) -> list[M.LineWire]:
        logs = self.logs
        if logs is None:
            logs = self.logs = []
        return logs


class Capture(io.TextIOBase):
    """sys.stdout / sys.stderr replacement that keeps lines with timestamps.

    Lines go to the current task's log list and travel with its result, cut
    and with their carriage returns handled as :mod:`.loglines` says. Once a
    task has run for STREAM_AFTER seconds, or LIVE_BYTES of its lines wait,
    lines written from the executor's thread are sent on at once (at most
    every STREAM_EVERY s) as a RESULTS frame with no results, so a long task's
    output reaches the journal while it runs and memory holds at most that
    much of it; short tasks pay nothing for this. Lines of the task's other
    threads go with the result, up to HELD_MAX characters (the rest are
    counted). Past TASK_BYTES of the task's output, lines go to a file on the
    node (:func:`.loglines.keep_file`), named in one row. A capture a task
    wrote to is reset by :meth:`end_task`.
    """

    STREAM_AFTER = 0.5
    STREAM_EVERY = 0.2
    LIVE_BYTES = 4 * ROW_MAX
    HELD_MAX = 16 * ROW_MAX

    def __init__(self, level: str, cur: Current, wfd: int | None = None) -> None:
        self.level = level
        self.cur = cur
        self.wfd = wfd           # to the agent, for lines of long tasks (None: never)
        self.thread = get_ident()
        self.buf: Lines[str] = Lines("")
        self.dropped = 0
        self.kept = 0
        self.t_sent = 0.0
        self.spill: Any = None    # the file past TASK_BYTES (opened at the first such line)

    def end_task(self) -> None:
        """After a task that wrote here: its last partial line, then a clean state."""
        rows = self.buf.flush()
        if rows:
            self._keep(rows, time.time(), live=False)
        if self.spill is not None:
            self.spill.close()
            self.spill = None
        if self.dropped:
            self.cur.lines().append((time.time(), "RAW",
                                     f"[taskflow] {self.dropped} more {self.level} lines "
                                     f"dropped (cap {INLINE_LOG_LINES} {self.level} lines "
                                     f"per task)"))
            self.dropped = 0
        self.kept = 0
        self.t_sent = 0.0

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        if not s:
            return 0
        self.cur.wrote = True
        rows = self.buf.add(s)
        if rows:
            self._keep(rows, time.time(), self.wfd is not None)
        return len(s)

    def _keep(self, rows: list[str], t: float, live: bool) -> None:
        cur = self.cur
        if cur.held > self.HELD_MAX and get_ident() != self.thread:
            self.dropped += len(rows)       # another thread's lines, with no room left
            return
        if cur.total > TASK_BYTES:
            self._spill(rows, t)
            return
        sink = cur.lines()
        level = self.level
        kept = self.kept
        size = 0
        for line in rows:
            if kept < INLINE_LOG_LINES:
                sink.append((t, level, line))
                kept += 1
                size += len(line)
            else:
                self.dropped += 1
        self.kept = kept
        cur.held += size
        cur.total += size
        if live and (cur.held > self.LIVE_BYTES or (t - self.t_sent > self.STREAM_EVERY
                                                     and t - cur.t0 > self.STREAM_AFTER)):
            self._send_live(t)

    def _spill(self, rows: list[str], t: float) -> None:
        """The task's output is past what the journal keeps: to its file on this node."""
        if self.spill is None:
            path = keep_file(self.cur.tid, self.level)
            if path is None:
                self.dropped += len(rows)
                return
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
            self.spill = open(fd, "a", encoding="utf-8", errors="surrogatepass")
            self.cur.lines().append((t, "RAW", f"[taskflow] this task's {self.level} past "
                                     f"{TASK_BYTES >> 20} MiB of output is in {path} on this "
                                     f"task's node"))
        self.spill.write("\n".join(rows) + "\n")

    def _send_live(self, t: float) -> None:
        if get_ident() != self.thread:
            return   # another thread of the task: its lines go with the result
        self.t_sent = t
        send_lines(self.wfd, self.cur, self.cur.logs)

    def isatty(self) -> bool:
        return False


# Held while a frame is written to the agent from inside a running task (its lines, its
# calls, its waits, its streams): the thread sending a task's held calls (.nested) writes too
WRITING = threading.Lock()
if hasattr(WRITING, "_at_fork_reinit"):     # a process a task forks must not inherit it held
    os.register_at_fork(after_in_child=WRITING._at_fork_reinit)


def send_lines(wfd: int | None, cur: Current, logs: list[M.LineWire] | None) -> None:
    """Send the running task's lines so far to the agent (a RESULTS frame with no
    results) and empty ``logs``, in place: the task's captures keep appending to it."""
    if wfd is not None and logs:
        lines = list(logs)
        del logs[:]
        cur.held = 0
        frame = P.encode(M.RESULTS, ([], [(cur.tid, lines)]))
        with WRITING:
            P.write_all(wfd, frame)
