"""``taskflow run --trace-file F``: the trace's rows written while the run goes.

A subscriber of the run's event bus (rows included, as the journal's): a row
per attempt that ended, written at the delivery that brings its end (tens of
milliseconds after it) and flushed with the delivery, so ``tail -f F`` shows
each attempt as it ends. It holds a small record per
task between its call and its end (bounded by the tasks the run holds
anyway); a task's record goes at its end. A write that fails (a full disk)
is said once on stderr and ends the file; the run goes on, and ``taskflow
trace RUN --format ...`` writes the same rows from the journal afterwards.

The format follows the file's name: ``.csv`` CSV, ``.json`` / ``.jsonl`` one
JSON object per line, anything else TSV.
"""
from __future__ import annotations

import logging
import os
import threading
from typing import TYPE_CHECKING, Any, IO

from ...graph.task import error_exit_code
from ...journal.wire import constraints_text
from .fields import TableWriter
from .rows import HANDED_BACK, first_line, measures, resources_asked, resources_given

if TYPE_CHECKING:
    from ...events import RowBatch
    from ...graph.spec import TaskSpec
    from ...runtime.bus import EventBus

log = logging.getLogger(__name__)


def format_of(path: str) -> str:
    ext = os.path.splitext(path)[1].lower()
    return "csv" if ext == ".csv" else "json" if ext in (".json", ".jsonl") else "tsv"


class _Task:
    """What a task's rows need from its call until its end."""

    __slots__ = ("name", "submit", "asked", "parent", "start", "used", "ended", "attempt",
                 "restored", "held")

    def __init__(self, name: str, submit: float, asked: str | None) -> None:
        self.name, self.submit, self.asked = name, submit, asked
        self.parent: int | None = None
        self.start: float | None = None
        self.used: tuple[Any, ...] | None = None
        self.ended: float | None = None       # the attempt's end, as its usage says
        self.attempt = 0
        self.restored = False
        self.held: list[tuple[str, int]] | None = None     # [(node, slots)]: several


class TraceFile:
    """Writes the rows of one run's attempts to ``path`` as they end (see the module)."""

    def __init__(self, path: str, fields: list[str], bus: EventBus) -> None:
        """Opens ``path`` now (an error here is the caller's to say: the run has not
        started); a file there is replaced."""
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        self.path = path
        self.f: IO[str] | None = os.fdopen(fd, "w", newline="")
        self.w = TableWriter(self.f, format_of(path), fields, lines=True)
        self.w.header()
        self.f.flush()
        self.tasks: dict[int, _Task] = {}
        self.asked: dict[TaskSpec, str | None] = {}     # per task function
        self._lock = threading.Lock()
        self.bus = bus
        bus.subscribe(self.on_events, rows=True)

    # -- the bus thread ---------------------------------------------------------------
    def on_events(self, batch: RowBatch) -> None:
        whole, sub, evs, done = batch
        with self._lock:
            if self.f is None:
                return
            try:
                for tid, t, spec, *_ in sub:
                    self._called(tid, t, spec)
                for tid, t, spec, *_ in whole:
                    self._called(tid, t, spec)
                for ev in evs:
                    self._event(ev)
                for tid, _, _, _, _, _, _, t0, t1, _, node, att, code in whole:
                    self._ended(tid, "DONE", t0, t1, node, att, code, None)
                for tid, t0, t1, _, node, att, _, code in done:
                    self._ended(tid, "DONE", t0, t1, node, att, code, None)
                if self.f is not None:
                    self.f.flush()
            except Exception as exc:  # noqa: BLE001 - the file is the user's extra: the run goes on
                self._failed(exc)

    def _called(self, tid: int, t: float, spec: TaskSpec) -> None:
        if spec in self.asked:
            asked = self.asked[spec]
        else:
            asked = self.asked[spec] = resources_asked(constraints_text(spec))
        self.tasks[tid] = _Task(spec.name, t, asked)

    def _event(self, ev: Any) -> None:
        kind, t, tid, _, node, extra = ev
        task = self.tasks.get(tid)
        if task is None:
            return
        if kind == "running":
            task.start = t
        elif kind == "dispatched":
            task.held = extra
        elif kind == "usage":
            task.used = extra
            task.ended = t
        elif kind == "nested":
            task.parent = extra
        elif kind == "restored":
            task.restored = True
        elif kind == "retry":
            if not str(extra).startswith(HANDED_BACK):
                task.attempt += 1
                self._row(tid, task, "RETRIED", task.start, task.ended or t, node, None,
                          first_line(extra))
                task.start = task.used = task.ended = None
        elif kind in ("failed", "cancelled", "interrupted"):
            t0, t1, first, err, att, _ = extra
            code = error_exit_code(err) if err is not None else None
            self._ended(tid, kind.upper(), t0, t1 or t, node, att, code, first)

    def _ended(self, tid: int, status: str, t0: float | None, t1: float | None, node: str,
               att: int, code: int | None, error: str | None) -> None:
        task = self.tasks.pop(tid, None)
        if task is None:
            return
        if task.restored:
            self._row(tid, task, "RESTORED", None, t1, None, None, None, attempt=None)
            return
        self._row(tid, task, status, t0 or task.start, t1, node, code, error,
                  attempt=max(att, task.attempt + 1) if (t0 or task.start) else att or None)

    def _row(self, tid: int, task: _Task, status: str, start: float | None,
             end: float | None, node: str | None, code: int | None, error: str | None,
             attempt: int | None = -1) -> None:
        row: dict[str, Any] = {
            "task_id": tid, "name": task.name, "status": status, "exit": code,
            "attempt": task.attempt if attempt == -1 else attempt, "submit": task.submit,
            "start": start, "complete": end, "node": node or None, "parent": task.parent,
            "resources_asked": task.asked, "error": error}
        if end:
            row["duration"] = end - task.submit
            if start:
                row["realtime"] = max(0.0, end - start)
        if start and node:
            row["resources_given"] = resources_given(task.held or [(node, _units(task.asked))])
        used = task.used
        if used is not None:
            cpu, rss, rd, wr, *how = used
            measures(row, cpu, rss, rd if rd >= 0 else None, wr if wr >= 0 else None,
                     how[0] if how else None)
        if self.f is not None:          # (None: a write failed earlier in this delivery)
            self.w.row(row)

    def _failed(self, exc: Exception) -> None:
        """Say once why the file ends here, and close it; the run goes on."""
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else repr(exc)
        log.warning("--trace-file %s: %s; no more rows are written there (taskflow trace "
                    "RUN --format %s writes them from the journal)", self.path, why,
                    self.w.fmt)
        f, self.f = self.f, None
        try:
            if f is not None:
                f.close()
        except OSError:
            pass

    def close(self) -> None:
        """After the run's bus delivered its last events."""
        self.bus.unsubscribe(self.on_events)
        with self._lock:
            if self.f is not None:
                try:
                    self.f.close()
                except OSError as exc:
                    self._failed(exc)
                self.f = None


def _units(asked: str | None) -> int:
    """The slots a task held on its node, from its ``resources_asked`` (the units)."""
    for word in (asked or "").split(";"):
        if word.startswith("computing_units="):
            try:
                return max(int(word.split("=", 1)[1]), 1)
            except ValueError:
                break
    return 1
