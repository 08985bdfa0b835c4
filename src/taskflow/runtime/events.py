"""The runtime's event bus: task lifecycle, node and log events for observers.

Emitting is one ``list.append`` when somebody listens and nothing at all
when nobody does (callers test :attr:`EventBus.active` first). A bus thread
hands the events to subscribers in batches, so a slow subscriber (the
journal, a progress bar, the web monitor) never sits on the hot path.

An event is a tuple ``(kind, t, task_id, name, node, extra)``; kinds:
``submitted ready dispatched running done failed cancelled retry`` for
tasks, ``node_join node_lost sample`` for nodes (``task_id`` 0), ``log`` for a
task's output line (``extra`` = (level, line)), ``run_start run_end``.
``submitted`` extra = (dep task ids, argv, kwargs, refs, spec) — references
only, the journal makes the short form; ``done failed cancelled`` extra =
(t_start, t_end, error's first line, error, attempts, t_dispatch). Tasks
known to take under 5 ms get no ``dispatched`` event.

The two events every task has are the hot ones, so they are not built as
event tuples when they happen: ``submitted`` and a successful ``done`` are
appended as rows (:meth:`EventBus.submitted_row`, :meth:`EventBus.done_row`;
the emitters hold the runtime lock, which the bus takes to swap the lists).
A subscriber that says ``rows=True`` (the journal) gets them as two events
per batch, ``("task_rows_submitted", 0, 0, "", "", rows)`` first and
``("task_rows_done", 0, 0, "", "", rows)`` last; every other subscriber gets
the same rows expanded into the ``submitted`` / ``done`` tuples above, so its
view does not change.
"""
from __future__ import annotations

import threading
from collections import deque
import time
from typing import Any, Callable, Iterable

Event = tuple
Subscriber = Callable[[list], None]


class EventBus:
    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self.active = False
        self._subs: list[Subscriber] = []
        self._row_subs: set = set()
        self._buf: deque = deque()
        self.sub_rows: list = []     # (tid, t_submit, spec, argv, kwargs, refs, dep ids)
        self.done_rows: list = []    # (tid, t_start, t_end, t_dispatch, node, attempts, name,
        #                              exit code of an external program or None)
        self.rows_lock: Any = None   # the runtime lock: held by whoever appends rows
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stop = False

    def subscribe(self, fn: Subscriber, rows: bool = False) -> None:
        """``fn(events)`` is called from the bus thread with a list of events."""
        with self._cv:
            self._subs.append(fn)
            if rows:
                self._row_subs.add(fn)
            self.active = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="taskflow-events",
                                                daemon=True)
                self._thread.start()

    def unsubscribe(self, fn: Subscriber) -> None:
        with self._cv:
            if fn in self._subs:
                self._subs.remove(fn)
            self._row_subs.discard(fn)
            self.active = bool(self._subs)

    def emit(self, ev: Event) -> None:
        self._buf.append(ev)

    def emit_many(self, evs: Iterable[Event]) -> None:
        self._buf.extend(evs)

    def submitted_row(self, row: tuple) -> None:
        """A task was submitted (caller holds the runtime lock): see the module docstring."""
        self.sub_rows.append(row)

    def done_row(self, row: tuple) -> None:
        """A task ended well (caller holds the runtime lock)."""
        self.done_rows.append(row)

    def now(self) -> float:
        return time.time()

    def _loop(self) -> None:
        while True:
            with self._cv:
                self._cv.wait(self.interval)
                stop = self._stop
            self._deliver()
            if stop:
                return

    def _deliver(self) -> None:
        q = self._buf
        n = len(q)
        pop = q.popleft
        buf = [pop() for _ in range(n)]      # first: a row must not trail its task's events
        sub = done = None
        if self.sub_rows or self.done_rows:
            lock = self.rows_lock
            if lock is not None:
                with lock:
                    sub, self.sub_rows = self.sub_rows, []
                    done, self.done_rows = self.done_rows, []
            else:
                sub, self.sub_rows = self.sub_rows, []
                done, self.done_rows = self.done_rows, []
        if not buf and not sub and not done:
            return
        expanded = None
        for fn in list(self._subs):
            try:
                if fn in self._row_subs:
                    fn(([("task_rows_submitted", 0.0, 0, "", "", sub)] if sub else []) + buf +
                       ([("task_rows_done", 0.0, 0, "", "", done)] if done else []))
                    continue
                if expanded is None:
                    expanded = _expand_submitted(sub) + buf + _expand_done(done)
                fn(expanded)
            except Exception as exc:  # an observer must not break the run
                import sys
                print(f"taskflow: event subscriber {fn!r} failed: {exc!r}", file=sys.stderr)

    def flush(self) -> None:
        """Deliver everything emitted so far (from any thread but the bus's)."""
        if self._thread is not None:
            with self._cv:
                self._deliver()

    def close(self) -> None:
        if self._thread is None:
            return
        with self._cv:
            self._stop = True
            self._cv.notify()
        self._thread.join(5)
        self._deliver()
        self._thread = None


def _expand_submitted(rows: list | None) -> list:
    return [("submitted", t, tid, spec.name, "", (deps or [], argv, kw, refs, spec))
            for tid, t, spec, argv, kw, refs, deps in rows] if rows else []


def _expand_done(rows: list | None) -> list:
    return [("done", t1, tid, name, node, (t0, t1, None, None, att, tdisp))
            for tid, t0, t1, tdisp, node, att, name, _ in rows] if rows else []
