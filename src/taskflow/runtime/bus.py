"""The runtime's event bus: task lifecycle, node and log events for observers.

Emitting is one ``list.append`` when somebody listens and nothing at all
when nobody does (callers test :attr:`EventBus.active` first). A bus thread
hands the events to subscribers in batches, so a slow subscriber (the
journal, a progress bar, the web monitor) never sits on the hot path.

An event is a named tuple of six fields, ``(kind, t, task_id, name, node,
extra)``, one class per kind that says what its sixth field holds
(:mod:`taskflow.events`); kinds: ``submitted ready dispatched running done
failed cancelled interrupted retry rerun restored usage log`` for tasks,
``node_join node_leaving node_left node_lost node_state sample memory`` for
nodes. Tasks known to take under 5 ms get no ``ready``, ``dispatched`` or
``running`` event.

The two records every task has are the hot ones, so they are not built as
events when they happen: the runtime appends the :class:`Task` itself
to :attr:`EventBus.sub_rows` when it is submitted (with its dependencies'
ids when it has some) and to :attr:`EventBus.done_rows` when it ends well
(the emitters hold the runtime lock, which the bus takes to swap the lists).
The bus thread makes the rows from them at delivery. A subscriber that says
``rows=True`` (the journal) gets each delivery as one
:data:`~taskflow.events.RowBatch` ``(whole, submitted, events, done)``: a task
submitted and ended well since the last delivery is one *whole* row, the
others a *submitted* row and later a *done* row (plain tuples:
:class:`~taskflow.events.WholeRow`, ``SubmittedRow``, ``DoneRow``), and
``events`` are the other events in order; every other subscriber gets a
list of events, the rows expanded into :class:`~taskflow.events.Submitted` and
``Ended`` "done" events, so its view does not change. The resume log takes
the tasks that ended well themselves (:meth:`EventBus.watch_ended`): it keeps
their calls and values (runtime/recovery/log.py) at no cost to the loop thread, and
later still than the rows: when a delivery finds nothing new (the burst is
over), after ``max_delay`` at the latest, or when flushed; a task whose value
stayed on its node at its own delivery (held, it would keep that value on
the node: no DROP while its future lives).

Delivery waits while a burst of short tasks goes on: when more than
:attr:`EventBus.burst` task rows came in since the last tick, the bus lets
them pile up, for at most :attr:`EventBus.max_delay` seconds. Rows and
pickles for observers then cost the master's GIL after the burst, when it
waits, and not while it feeds the nodes; a run of long tasks, or a slow
trickle, is delivered every ``interval`` as before.

The rows are bounded: a row holds its task's record until it is delivered,
so a journal slower than the tasks (its process starved of CPU) would let
them, and the master's memory, grow with the tasks done. Past
:attr:`EventBus.backlog_limit` rows not yet delivered the bus delivers at once and the
thread that submits tasks waits (:meth:`EventBus.wait_backlog`) until half
are: the run goes at the journal's pace instead of holding ten million
finished tasks.
"""
from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Iterable

from ..graph.task import exit_code
from ..events import DoneWire, Ended, Submitted, SubmittedWire, WholeWire
from ..events import Event as Event

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from ..graph.spec import TaskSpec
    from ..graph.task import Task

Subscriber = Callable[[Any], None]     # gets a list[Event], or a RowBatch (rows=True)


QUIET = 0.6     # s without events after which row subscribers get an empty batch
ENDED_BATCH = 20_000   # tasks the ended-tasks hook gets at most at once (each holds its record)
SUB_HOLD = 0.5  # s a new task's row may wait for its end to go out as one row (_hold_back)


class EventBus:
    burst = 2000        # task rows per tick above which delivery waits (see module doc)
    max_delay = 1.0     # s: the longest a row waits for delivery
    backlog_limit = 200_000  # rows not delivered yet before the submitting thread waits

    def __init__(self, interval: float = 0.1) -> None:
        self.interval = interval
        self.active = False
        self._subs: list[Subscriber] = []
        self._row_subs: set[Subscriber] = set()
        self._buf: deque[Event] = deque()
        # Tasks, made into rows at delivery (see _rows)
        self.sub_rows: list[Any] = []     # Task, or (Task, [dep task id, ...])
        self.done_rows: list[Task] = []   # tasks that ended well
        self.rows_lock: Any = None   # the runtime lock: held by whoever appends rows
        self._seen = 0               # rows pending at the last tick
        self._last = 0.0             # time of the last delivery
        self._quiet_at = 0.0         # when row subscribers get an empty batch (see _deliver)
        self._cv = threading.Condition()
        self._thread: threading.Thread | None = None
        self._stop = False
        self._delivering = 0         # rows of the delivery under way (taken from the lists)
        self._one_delivery = threading.Lock()   # one delivery at a time (flush, the thread)
        self._ended_hook: Callable[[list[Task]], None] | None = None
        self._ended_now: Callable[[Task], bool] | None = None   # ... those it takes at once
        self._ended: list[Task] = []     # ended well, for the hook (see the module doc)
        self._ended_since = 0.0          # when the oldest of them came
        self.waited = 0.0            # s submitters waited on the backlog (the journal's pace)
        self._urgent = False         # a submitter waits on the backlog: deliver now

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

    def watch_ended(self, fn: Callable[[list[Task]], None],
                    at_once: Callable[[Task], bool] | None = None) -> None:
        """``fn(tasks)`` gets, at each delivery and before any subscriber, the tasks that
        ended well since the last one (the bus keeps them from then on, journal or not);
        those for which ``at_once(task)`` is true it gets at the delivery they come in,
        never held for the burst's end (a task held keeps its futures, and so its values,
        alive: one that stayed on its node would not be dropped there meanwhile)."""
        with self._cv:
            self._ended_hook = fn
            self._ended_now = at_once
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
            self.active = bool(self._subs) or self._ended_hook is not None

    def emit(self, ev: Event) -> None:
        """``ev``: one of the records of :mod:`taskflow.events`."""
        self._buf.append(ev)

    def emit_many(self, evs: Iterable[Event]) -> None:
        self._buf.extend(evs)

    def now(self) -> float:
        return time.time()

    def _loop(self) -> None:
        self._last = time.monotonic()
        while True:
            with self._cv:
                self._cv.wait(self.interval)
                stop = self._stop
            if not stop and self._bursting():
                continue
            self._deliver(force=stop, hold=not stop)
            if stop:
                return

    def backlog(self) -> int:
        """Task rows not delivered yet (each holds its task's record)."""
        return len(self.sub_rows) + len(self.done_rows) + self._delivering

    def wait_backlog(self, below: int) -> None:
        """A thread that submits tasks (holding no lock the bus takes) waits until fewer
        than ``below`` rows wait for delivery; the bus delivers meanwhile, burst or not."""
        t0 = time.monotonic()
        with self._cv:
            while self.backlog() >= below and not self._stop and self._thread is not None:
                self._urgent = True
                self._cv.notify_all()
                self._cv.wait(0.5)
        self.waited += time.monotonic() - t0

    def _bursting(self) -> bool:
        """Many rows came in since the last tick, and none has waited max_delay yet."""
        n = len(self.sub_rows) + len(self.done_rows)
        if self._urgent or n >= self.backlog_limit:
            return False
        grew, self._seen = n - self._seen, n
        return grew > self.burst and time.monotonic() - self._last < self.max_delay

    def _deliver(self, force: bool = False, hold: bool = False) -> None:
        with self._one_delivery:
            self._deliver_now(force, hold)

    def _ended_well(self, ended: list[Task], quiet: bool, now: float) -> None:
        """The hook gets the tasks that ended well once the burst is over (``quiet``), or
        they waited ``max_delay``; those it takes at once (:meth:`watch_ended`) now."""
        at_once = self._ended_now
        if ended and at_once is not None:
            now_: list[Task] = []
            later: list[Task] = []
            for t in ended:
                (now_ if at_once(t) else later).append(t)
            if now_:
                self._call_ended(now_)
            ended = later
        if ended:
            if not self._ended:
                self._ended_since = now
            self._ended.extend(ended)
        if self._ended and (quiet or len(self._ended) >= ENDED_BATCH
                            or now - self._ended_since >= self.max_delay):
            tasks, self._ended = self._ended, []
            self._call_ended(tasks)

    def _call_ended(self, tasks: list[Task]) -> None:
        assert self._ended_hook is not None
        try:
            self._ended_hook(tasks)
        except Exception as exc:  # (the hook says its own failures; this is a bug)
            log.error("the ended-tasks hook %r failed: %r", self._ended_hook, exc)

    def _deliver_now(self, force: bool = False, hold: bool = False) -> None:
        """Hand everything emitted so far to the subscribers; ``hold`` (the bus thread's
        deliveries): in a burst, the rows of tasks submitted in the last :data:`SUB_HOLD`
        seconds that have not ended and have no event in this delivery wait for the next
        one, where most of them go out as one whole row instead of two."""
        q = self._buf
        pop = q.popleft
        entries: list[Any] = []     # submitted tasks, then the rows made of them (_rows)
        ended: list[Task] = []
        # Events and rows are cut at one moment, under the lock their emitters hold: a row
        # never goes out behind its task's events, nor ahead of an event emitted before it
        # (the loop emits a task's "running" and appends its done row in one round: the
        # row first would be undone by the event in the journal).
        lock = self.rows_lock
        with lock if lock is not None else contextlib.nullcontext():
            buf = [pop() for _ in range(len(q))]
            if self.sub_rows or self.done_rows:
                entries, self.sub_rows = self.sub_rows, []
                ended, self.done_rows = self.done_rows, []
                self._delivering = len(entries) + len(ended)
        if hold and len(entries) > self.burst and len(buf) < len(entries) // 8:
            # (short tasks: they have no other events; the scan without the runtime's lock)
            entries, later = _hold_back(entries, ended, buf)
            if later:
                with lock if lock is not None else contextlib.nullcontext():
                    self.sub_rows = later + self.sub_rows
                self._delivering = len(entries) + len(ended)
        try:
            self._deliver_taken(buf, entries, ended, force)
        finally:
            if self._delivering or self._urgent:
                with self._cv:          # (a submitter may wait on the backlog)
                    self._delivering = 0
                    self._urgent = False
                    self._cv.notify_all()

    def _deliver_taken(self, buf: list[Event], entries: list[Any], ended: list[Task],
                       force: bool) -> None:
        """Hand what :meth:`_deliver` took to the subscribers (the ended-tasks hook first)."""
        self._seen = 0
        now = self._last = time.monotonic()
        if self._ended_hook is not None:
            self._ended_well(ended, force or not (buf or entries or ended), now)
        if not buf and not entries and not ended:
            # Nothing new, but a row subscriber may hold rows back (the journal does, for
            # up to half a second): give it one empty batch after a quiet spell, so the
            # row of a task that runs long shows before the task's next event.
            if self._quiet_at and now >= self._quiet_at:
                self._quiet_at = 0.0
                for fn in list(self._row_subs):
                    try:
                        fn(([], [], [], []))
                    except Exception as exc:  # an observer must not break the run
                        log.warning("event subscriber %r failed: %r", fn, exc)
            return
        self._quiet_at = now + QUIET
        sub: list[SubmittedWire[TaskSpec]] = []
        whole: list[WholeWire[TaskSpec]] = []
        done: list[DoneWire] = []
        if entries or ended:
            sub, whole, done = _rows(entries, ended)
        expanded: list[Event] | None = None
        for fn in list(self._subs):
            try:
                if fn in self._row_subs:
                    fn((whole, sub, buf, done))
                    continue
                if expanded is None:
                    expanded = (_expand_whole_submitted(whole) + _expand_submitted(sub) + buf
                                + _expand_whole_done(whole) + _expand_done(done))
                fn(expanded)
            except Exception as exc:  # an observer must not break the run
                log.warning("event subscriber %r failed: %r", fn, exc)

    def flush(self) -> None:
        """Deliver everything emitted so far (from any thread but the bus's)."""
        if self._thread is not None:
            # (not under _cv: a delivery takes _one_delivery, then _cv at its end)
            self._deliver(force=True)

    def close(self) -> None:
        if self._thread is None:
            return
        with self._cv:
            self._stop = True
            self._cv.notify()
        self._thread.join(5)
        self._deliver(force=True)
        self._thread = None


def _hold_back(entries: list[Any], ended: list[Task], buf: list[Event]
               ) -> tuple[list[Any], list[Any]]:
    """(the submitted rows to deliver now, those to keep for the next delivery): a row
    waits when its task was submitted less than SUB_HOLD s ago, has not ended, and no
    event of it goes out now (a row never follows its task's events). Rows are in
    submission order: those submitted before the cut go at once, unlooked at."""
    cut = time.time() - SUB_HOLD
    lo, hi = 0, len(entries)
    while lo < hi:                  # the first row submitted after the cut
        mid = (lo + hi) // 2
        e = entries[mid]
        t = e if type(e) is not tuple else _task_of(e)
        if t.t_submit > cut:
            hi = mid
        else:
            lo = mid + 1
    done = set(ended)
    told = {ev.task_id for ev in buf}
    now: list[Any] = entries[:lo]
    later: list[Any] = []
    for e in entries[lo:]:
        t = e if type(e) is not tuple else _task_of(e)
        if t not in done and t.id not in told:
            later.append(e)
        else:
            now.append(e)
    return now, later


def _task_of(entry: tuple[Task, list[int]]) -> Task:
    t, _ = entry
    return t


def _rows(entries: list[Any], done: list[Task]
          ) -> tuple[list[SubmittedWire[TaskSpec]], list[WholeWire[TaskSpec]], list[DoneWire]]:
    """(submitted rows, whole rows, done rows) for one delivery (events.WholeRow:
    a task submitted and ended well since the last delivery, nearly every short task,
    is one tuple to build and to pickle instead of two)."""
    ended = set(done)
    sub: list[SubmittedWire[TaskSpec]] = []
    whole: list[WholeWire[TaskSpec]] = []
    for e in entries:
        if type(e) is tuple:
            t, deps = e
        else:
            t, deps = e, None
        if t in ended:
            ended.discard(t)
            node = t.node
            whole.append((t.id, t.t_submit, t.spec, t.argv, t.kwargs, t.refs, deps, t.t_start,
                          t.t_end, t.t_dispatch, node.name if node is not None else "",
                          # attempts: its runs (a call a resumed run restored ran on no node)
                          t.attempts + t.crashes + 1 if node is not None else 0, _code(t)))
        else:
            sub.append((t.id, t.t_submit, t.spec, t.argv, t.kwargs, t.refs, deps))
    rest = _done_rows([t for t in done if t in ended]) if ended else []
    return sub, whole, rest


def _code(task: Task) -> int | None:
    """An external program's exit code (None for Python tasks, at no cost)."""
    return None if task.spec.invoker == "python" else exit_code(task)


def _done_rows(tasks: list[Task]) -> list[DoneWire]:
    out: list[DoneWire] = []
    for t in tasks:
        node = t.node
        out.append((t.id, t.t_start, t.t_end, t.t_dispatch, node.name if node is not None
                    else "", t.attempts + t.crashes + 1 if node is not None else 0,
                    t.spec.name, _code(t)))
    return out


def _expand_submitted(rows: list[SubmittedWire[TaskSpec]]) -> list[Event]:
    return [Submitted("submitted", t, tid, spec.name, "", (deps or [], argv, kw, refs, spec))
            for tid, t, spec, argv, kw, refs, deps in rows]


def _expand_whole_submitted(rows: list[WholeWire[TaskSpec]]) -> list[Event]:
    return [Submitted("submitted", t, tid, spec.name, "", (deps or [], argv, kw, refs, spec))
            for tid, t, spec, argv, kw, refs, deps, _, _, _, _, _, _ in rows]


def _expand_whole_done(rows: list[WholeWire[TaskSpec]]) -> list[Event]:
    return [Ended("done", t1, tid, spec.name, node, (t0, t1, None, None, att, tdisp))
            for tid, _, spec, _, _, _, _, t0, t1, tdisp, node, att, _ in rows]


def _expand_done(rows: list[DoneWire]) -> list[Event]:
    return [Ended("done", t1, tid, name, node, (t0, t1, None, None, att, tdisp))
            for tid, t0, t1, tdisp, node, att, name, _ in rows]
