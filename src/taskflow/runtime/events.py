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
"""
from __future__ import annotations

import threading
from collections import deque
import time
from typing import Callable, Iterable

Event = tuple
Subscriber = Callable[[list], None]


class EventBus:
    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self.active = False
        self._subs: list[Subscriber] = []
        self._buf: deque = deque()
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stop = False

    def subscribe(self, fn: Subscriber) -> None:
        """``fn(events)`` is called from the bus thread with a list of events."""
        with self._cv:
            self._subs.append(fn)
            self.active = True
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="taskflow-events",
                                                daemon=True)
                self._thread.start()

    def unsubscribe(self, fn: Subscriber) -> None:
        with self._cv:
            if fn in self._subs:
                self._subs.remove(fn)
            self.active = bool(self._subs)

    def emit(self, ev: Event) -> None:
        self._buf.append(ev)

    def emit_many(self, evs: Iterable[Event]) -> None:
        self._buf.extend(evs)

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
        if not n:
            return
        pop = q.popleft
        buf = [pop() for _ in range(n)]
        for fn in list(self._subs):
            try:
                fn(buf)
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
