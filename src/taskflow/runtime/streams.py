"""The run's streams (``taskflow.Stream``, ``taskflow.FileStream``): the master keeps them.

A stream is known from the first time it is given to a task or used by the
program. Tasks reach it over their node's wire (``StreamPublish``,
``StreamClose``, ``StreamPoll`` in NEST frames: :mod:`taskflow.runtime.nesting`
hands them here, in the loop thread); the program calls
:class:`~taskflow.runtime.current.ProgramClient`.

- **Parts.** Each task given the stream as ``STREAM_OUT`` is a producer from
  its call on, and the program is one from its first ``publish`` or ``close``.
  A producer's part closes when it calls ``close()`` or, for a task, when it
  ends; the stream closes when every part it had is closed. A producer task
  that fails, or runs again (its node was lost: ``NodeLost``), closes the
  stream with that error after what it had published is kept.
- **Delivery.** Every item goes to exactly one poll of each consumer group, in
  the order items arrived (per producer: its publishing order). A poll that
  finds nothing waits (up to its timeout) and is answered the moment an item
  or the close comes. Items every group has read are dropped; the rest stay in
  memory up to a bound, then on disk (:mod:`.streamitems`).
- **Resume** (:mod:`.streamreplay`): a resumable run keeps every item in its
  directory; a resumed run replays a stream that closed in the earlier run
  once its producers are restored, and produces the others anew.
- **Files.** A FileStream's items are the paths of the files its directory
  gets, as the master lists it (:mod:`.streamfiles`).
- **The journal** gets each stream (its opening, producers, consumers, item
  count and close) through the bus (``StreamNote`` events).

A poll from a task is a wait: once it has waited :data:`LEND_AFTER` seconds,
:mod:`.nesting` lends the task's slot to its node, as it does for ``wait_on``
in a task, so consumers that wait never keep a producer from starting (no
deadlock whatever the slot count); a poll answered sooner lends nothing, so
the work of other tasks is not stacked on a consumer that is busy.
"""
from __future__ import annotations

import heapq
import logging
import os
import pickle
import threading
import time
from typing import TYPE_CHECKING, Any

from ..errors import NodeLost
from ..events import StreamNote
from ..graph import task as T
from ..wire import messages as M
from ..wire.streams import FILES, SYNC_GROUP, Stream, StreamClosed, StreamFailed
from .streamfiles import FileListing
from .streamitems import Items
from .streamreplay import Held, Replay, StreamReplays, closed_frame, find, kept_path, past

if TYPE_CHECKING:
    from ..graph.task import Task
    from ..providers.handle import NodeHandle
    from .state import RunState

POLL_ITEMS = 10_000         # items one poll takes at most ...
POLL_BYTES = 8 * 2**20      # ... and bytes
SCAN_EVERY = 0.1            # s between listings of a FileStream's directory while polled
# s a task's poll waits before its slot is lent to its node: a consumer that waits longer
# keeps no producer from starting (no deadlock), while one that gets items soon keeps
# its executor to itself (a task run on top of a waiting consumer would hold it up)
LEND_AFTER = 0.5
PROGRAM = 0                 # the program's part (task ids start at 1)
_WAITING = (T.SUBMITTED, T.READY)


class _Poll:
    """A poll waiting for items: a task's (answered over its node) or the program's."""

    __slots__ = ("group", "deadline", "take", "node", "parent", "wait", "event", "answer")

    def __init__(self, group: str, deadline: float | None, take: bool) -> None:
        self.group = group
        self.deadline = deadline
        self.take = take
        self.node: NodeHandle | None = None
        self.parent = self.wait = 0
        self.event: threading.Event | None = None
        self.answer: tuple[list[bytes], bool, bytes | None] | None = None


class StreamState:
    """One stream at the master."""

    def __init__(self, handle: Stream, spill: str, kept: bool) -> None:
        self.id = handle.id
        self.name = handle.name
        self.files = handle.kind == FILES
        self.base_dir: str = getattr(handle, "base_dir", "")
        self.items = Items(spill, kept=kept)
        self.producers: dict[int, Task] = {}   # producer tasks (the close frame names them)
        self.numbers: dict[int, int] = {}       # ... their numbers (a kept item has its own)
        self.restored: list[tuple[int, str, int]] = []  # ... restored: (number, name, ordinal)
        self.replay: Replay | None = None       # a resumed run: the earlier items, pending
        self.replayed = False                   # ... replayed: closed with them
        self.groups: dict[str, int] = {}        # group -> the next item number it reads
        self.parts: dict[int, bool] = {}        # producer (task id; 0: program) -> open
        self.closed = False
        self.error: bytes | None = None
        self.polls: list[_Poll] = []
        self.program_polled = False
        self.took: dict[int, int] = {}          # consumer task -> items its attempt took
        self.lost: dict[int, bytes] = {}        # ... that runs again: why its polls fail
        self.listing = FileListing(self.base_dir)     # a FileStream's directory
        self.ranges: dict[int, list[tuple[str, int, int]]] = {}  # consumer task -> took
        self.skip: dict[str, list[tuple[int, int]]] = {}    # group -> restored ones' items
        self.held: list[int] = []       # consumer tasks held for its replay (streamreplay)

    def group_at(self, group: str) -> int:
        at = self.groups.get(group)
        if at is None:
            at = self.groups[group] = self.items.first
        if self.skip:
            at = self.groups[group] = past(self, group, at)
        return at

    def left(self, group: str) -> bool:
        return self.group_at(group) < self.items.end

    def done_for(self, group: str) -> bool:
        return self.closed and not self.left(group)

    def running(self) -> dict[int, int]:
        """Its producers that may write now -> their numbers: the program's open part (0)
        and those of tasks dispatched (one called but waiting for inputs writes nothing)."""
        return {p: self.numbers.get(p, 0) for p, open_ in self.parts.items()
                if open_ and getattr(self.producers.get(p), "state", None) not in _WAITING}


class Streams(StreamReplays):
    """Every stream of the run (one per run, made at the first use of a stream)."""

    rt: RunState

    def __init__(self, rt: RunState, spill_dir: str, kept_dir: str | None = None,
                 earlier: tuple[str, str] | None = None) -> None:
        """``kept_dir``: a resumable run's ``streams/`` (every item kept there, else only
        those beyond the memory bound, in ``spill_dir``); ``earlier``: a resumed run's
        earlier run directory and its ``streams/`` (streams replayed from there)."""
        self.rt = rt
        self.spill_dir = kept_dir or spill_dir
        self.kept = kept_dir is not None
        self.earlier = earlier
        self.unnamed = 0                    # the program's streams numbered (Stream.numbered)
        self.lock = threading.Lock()
        self.by_id: dict[str, StreamState] = {}
        self.by_task: dict[int, list[tuple[StreamState, str, str]]] = {}  # (s, role, param)
        self.held: dict[int, Held] = {}
        self.freed: list[tuple[Task, str]] = []
        self.consumed: set[tuple[str, bytes]] = set()
        # polls' deadlines, a FileStream's next listing (poll None), a task's poll's lending
        self.timers: list[tuple[float, int, StreamState, _Poll | None]] = []
        self._tick = 0
        self.wake = threading.Condition(self.lock)
        self.stopped = False
        self.thread = threading.Thread(target=self._timers, name="taskflow-streams",
                                       daemon=True)
        self.thread.start()

    # -- call time (the submit path) ------------------------------------------------------
    def attach(self, task: Task, uses: list[tuple[Stream, bool, str]]) -> None:
        """``task`` was called with streams: (handle, produces, parameter). A producer's
        part opens now, so consumers called earlier wait for it; a closed stream given
        as STREAM_OUT is an error naming the task and the parameter."""
        notes = []
        with self.lock:
            for handle, produces, pname in uses:
                s = self._state(handle)
                if produces:
                    if s.closed:
                        raise StreamClosed(
                            f"task {task.spec.name}, parameter '{pname}': {s.name} is closed "
                            f"already{' (replayed from the earlier run)' if s.replayed else ''}"
                            f"; a closed stream takes no producer: make a new stream")
                    s.parts[task.id] = True
                    s.producers[task.id] = task
                    s.numbers[task.id] = len(s.numbers) + 1
                self.by_task.setdefault(task.id, []).append(
                    (s, "producer" if produces else "consumer", pname))
                notes.append((task.id, s.id, "producer" if produces else "consumer", pname))
        for tid, sid, role, pname in notes:
            self._note(tid, sid, role, pname)

    def known(self, handle: Stream) -> None:
        """The call time of a task given ``handle`` (graph.builder), before the task's copy
        of it is made: the run knows the stream (the program's is numbered now)."""
        with self.lock:
            self._state(handle)

    def _state(self, handle: Stream, by_task: bool = False) -> StreamState:
        """The stream of ``handle``, made at its first use (``by_task``: a message of a task
        that made the handle: it may have written files in a FileStream's directory)."""
        if handle.numbered(self.unnamed + 1, self):
            self.unnamed += 1
        s = self.by_id.get(handle.id)
        if s is None:
            os.makedirs(self.spill_dir, mode=0o700, exist_ok=True)
            if self.kept:
                path = kept_path(self.spill_dir, handle.id)
            else:
                path = os.path.join(self.spill_dir, f"stream-{len(self.by_id)}.items")
            s = self.by_id[handle.id] = StreamState(handle, path, self.kept)
            self._note(0, s.id, "open", f"{handle.kind} {s.name}")
            if self.earlier is not None:
                got = find(self.earlier[1], path, s.id, self.earlier[0])
                if got is not None and s.files and not by_task:    # (its earlier files)
                    s.listing.baseline()
                if isinstance(got, Replay):
                    s.replay = got
                elif got is not None:
                    self._said(logging.WARNING, f"stream {s.name} is not replayed from run "
                               f"{os.path.basename(self.earlier[0])}: {got}; its producers "
                               f"and consumers run again")
        return s

    # -- tasks' messages (the loop thread, the run's lock held) --------------------------
    def from_task(self, node: NodeHandle, task: Task, e: Any) -> None:
        kind = type(e)
        out: list[tuple[_Poll, tuple[list[bytes], bool, bytes | None]]] = []
        with self.lock:
            s = self.by_id.get(e.stream)
            if s is None:       # (a handle the task made itself: known from now on)
                s = self._state(_named(e.stream), by_task=True)
            if kind is M.StreamPublish:
                if not s.closed:
                    _add(s, e.items, s.numbers.get(task.id, 0))
                    self._serve(s, out)
            elif kind is M.StreamClose:
                self._close_part(s, task.id, None, out)
            else:
                p = _Poll(e.group, None if e.timeout is None else time.time() + e.timeout,
                          e.take)
                p.node, p.parent, p.wait = node, e.parent, e.wait
                self._ask(s, p, out)
        self._deliver(out, locked=True)

    def ended(self, task: Task) -> None:
        """``task`` ended (the loop thread): its parts close; a failure (or a cancel: its
        items would be missing) closes its streams with an error consumers see."""
        uses = self.by_task.pop(task.id, None)
        if not uses:
            return
        error: BaseException | None = None
        if task.state is not T.DONE:
            error = task.error or RuntimeError(f"it ended {task.state}")
        out: list[tuple[_Poll, tuple[list[bytes], bool, bytes | None]]] = []
        with self.lock:
            for s, role, pname in uses:
                s.took.pop(task.id, None)
                s.lost.pop(task.id, None)
                if role != "producer":      # (a resume restores it with what it took)
                    took = tuple(s.ranges.pop(task.id, ()))
                    key = self._key(task) if error is None and s.items.kept else None
                    if key is not None:
                        s.items.took(key, task.spec.name, took)
                    continue
                why = None
                if error is not None:
                    how = "was cancelled" if task.state is T.CANCELLED else "failed"
                    why = StreamFailed(
                        f"{s.name} was closed because its producer task {task.spec.name} "
                        f"(id {task.id}, parameter '{pname}') {how}: "
                        f"{type(error).__name__}: {str(error).splitlines()[0]}")
                self._close_part(s, task.id, why, out)
        self._deliver(out, locked=True)

    def again(self, task: Task, why: str, node_lost: bool) -> None:
        """``task`` runs again (its node was lost, its executor died, a retry): the streams
        it produced are closed with the reason, what it published is kept."""
        uses = self.by_task.get(task.id)
        if not uses:
            return
        out: list[tuple[_Poll, tuple[list[bytes], bool, bytes | None]]] = []
        with self.lock:
            for s, role, pname in uses:
                err: BaseException
                if role == "producer" and not s.closed:
                    msg = (f"{s.name} was closed: its producer task {task.spec.name} (id "
                           f"{task.id}, parameter '{pname}') held it open and {why}; the "
                           f"{s.items.end} item(s) it had were kept")
                    err = NodeLost(msg) if node_lost else StreamFailed(msg)
                    s.parts = {k: False for k in s.parts}
                    self._close(s, err, out)
                elif role == "consumer" and s.took.get(task.id):
                    # what the lost attempt took went to it: the new one cannot have it
                    msg = (f"consumer task {task.spec.name} (id {task.id}, parameter "
                           f"'{pname}') of {s.name} runs again ({why}) after its attempt "
                           f"took {s.took[task.id]} item(s), which a stream gives once: "
                           f"they cannot be given to it again")
                    err = NodeLost(msg) if node_lost else StreamFailed(msg)
                    s.lost[task.id] = _dump(err)
        self._deliver(out, locked=True)

    # -- the program (ProgramClient) ---------------------------------------------------------
    def publish(self, handle: Stream, items: list[bytes]) -> None:
        out: list[tuple[_Poll, tuple[list[bytes], bool, bytes | None]]] = []
        with self.lock:
            s = self._state(handle)
            if s.closed:
                raise StreamClosed(f"{s.name}: publish after it was closed; publish before "
                                   f"every producer closed it (a producer task closes its "
                                   f"part when it ends)")
            self._program(s, "producer")
            _add(s, items)
            self._serve(s, out)
        self._deliver(out, locked=False)

    def close(self, handle: Stream) -> None:
        out: list[tuple[_Poll, tuple[list[bytes], bool, bytes | None]]] = []
        with self.lock:
            s = self._state(handle)
            self._program(s, "producer")
            self._close_part(s, PROGRAM, None, out)
        self._deliver(out, locked=False)

    def program_ended(self) -> None:
        out: list[tuple[_Poll, tuple[list[bytes], bool, bytes | None]]] = []
        with self.lock:
            for s in self.by_id.values():
                if s.parts.get(PROGRAM):
                    self._close_part(s, PROGRAM, None, out)
                if s.replay is not None:
                    self.pending_at_end(s, out)
        self._deliver(out, locked=False)

    def poll(self, handle: Stream, group: str, timeout: float | None,
             take: bool) -> tuple[list[bytes], bool, bytes | None]:
        out: list[tuple[_Poll, tuple[list[bytes], bool, bytes | None]]] = []
        p = _Poll(group, None if timeout is None else time.time() + timeout, take)
        p.event = threading.Event()
        with self.lock:
            s = self._state(handle)
            self._program(s, "consumer")
            self._ask(s, p, out)
        self._deliver(out, locked=False)
        p.event.wait()
        assert p.answer is not None
        return p.answer

    def _program(self, s: StreamState, role: str) -> None:
        """The program produces or consumes ``s``: recorded once (task id 0)."""
        if role == "producer" and PROGRAM not in s.parts:
            s.parts[PROGRAM] = True
            self._note(PROGRAM, s.id, role, "(the program)")
        elif role == "consumer" and not s.program_polled:
            s.program_polled = True
            self._note(PROGRAM, s.id, role, "(the program)")

    # -- the rules (self.lock held) ----------------------------------------------------------
    def _ask(self, s: StreamState, p: _Poll, out: list[Any]) -> None:
        if p.parent in s.lost:          # (a consumer run again: see again)
            out.append((p, ([], True, s.lost[p.parent])))
            return
        if s.files and s.replay is None:     # (a replay pending: its files are not new)
            self._list(s)
        if not p.take or s.left(p.group) or s.closed or \
                (p.deadline is not None and p.deadline <= time.time()):
            out.append((p, self._take(s, p)))
            return
        s.polls.append(p)
        now = time.time()
        if p.deadline is not None or s.files:
            at = p.deadline if p.deadline is not None else float("inf")
            if s.files:
                at = min(at, now + SCAN_EVERY)
            self._timer(at, s, None)
        if p.node is not None and (p.deadline is None or p.deadline > now + LEND_AFTER):
            self._timer(now + LEND_AFTER, s, p)

    def _timer(self, at: float, s: StreamState, p: _Poll | None) -> None:
        self._tick += 1
        heapq.heappush(self.timers, (at, self._tick, s, p))
        self.wake.notify()

    def _take(self, s: StreamState, p: _Poll) -> tuple[list[bytes], bool, bytes | None]:
        if p.group == SYNC_GROUP:       # a producer's sync (agent.executor.streams): no group
            return [], s.closed, s.error
        items: list[bytes] = []
        if p.take:
            at = first = s.group_at(p.group)
            end = min(s.items.end, at + POLL_ITEMS)
            if s.skip.get(p.group):         # (up to items a restored consumer took)
                end = min(end, s.skip[p.group][0][0])
            size = 0
            while at < end and (size < POLL_BYTES or not items):
                blob = s.items.get(at)
                items.append(blob)
                size += len(blob)
                at += 1
            s.groups[p.group] = at
            if items and p.parent:
                s.took[p.parent] = s.took.get(p.parent, 0) + len(items)
                r = s.ranges.setdefault(p.parent, [])
                if r and r[-1][0] == p.group and r[-1][2] == first:
                    first = r.pop()[1]
                r.append((p.group, first, at))
            s.items.drop_before(min(s.groups.values()))
        done = s.done_for(p.group)
        return items, done, s.error if done else None

    def _serve(self, s: StreamState, out: list[Any]) -> None:
        """Answer the waiting polls that can be (in the order they came)."""
        if not s.polls:
            return
        keep = []
        for p in s.polls:
            if s.left(p.group) or s.closed:
                out.append((p, self._take(s, p)))
            else:
                keep.append(p)
        s.polls = keep

    def _close_part(self, s: StreamState, owner: int, error: BaseException | None,
                    out: list[Any]) -> None:
        if owner in s.parts:
            if s.files and s.parts[owner] and not s.closed and s.replay is None:
                self._list(s)     # (its last files: theirs if it was the one running)
                self._serve(s, out)
            s.parts[owner] = False
            s.listing.ended(owner)
        if s.closed:
            return
        if error is not None or not any(s.parts.values()):
            self._close(s, error, out)

    def _close(self, s: StreamState, error: BaseException | None, out: list[Any],
               replayable: bool = True) -> None:
        if s.files:
            late = self._list(s, final=True)
            if late:
                self._said(logging.WARNING, f"stream {s.name}: {late} file(s) the earlier run "
                           f"left are given as they were; several producers ran when they "
                           f"were written, so whether a restored one wrote them is unknown")
        s.closed = True
        if error is not None:
            s.error = _dump(error)
        if s.replay is not None:            # (produced anew after all: the earlier items go)
            s.replay.drop()
            s.replay = None
            self._free(s, f"stream {s.name} is not replayed but produced anew (see the log)")
        if s.items.kept:                    # (a failed write: the run fails, loudly)
            s.items.closed(closed_frame(s, error, self._key) if replayable else None)
        self._note(0, s.id, "close", f"{s.items.end} {type(error).__name__ if error else ''}")
        self._serve(s, out)

    def _list(self, s: StreamState, final: bool = False) -> int:
        """A FileStream's directory listed: its new files are items (runtime/streamfiles.py);
        how many earlier files of unknown producer were given (at the close)."""
        got, late = s.listing.scan(s.running(), final)
        for path, producer in got:
            s.items.append(pickle.dumps(path), producer)
        return late

    # -- answers ---------------------------------------------------------------------------
    def _deliver(self, out: list[tuple[_Poll, tuple[list[bytes], bool, bytes | None]]],
                 locked: bool) -> None:
        """Answers to their polls: the program's wake up, the tasks' go to their nodes
        (the loop sends them; ``locked``: the caller holds the run's lock)."""
        if self.freed:
            self.settle(locked)
        if not out:
            return
        remote = []
        for p, answer in out:
            if p.event is not None:
                p.answer = answer
                p.event.set()
            else:
                remote.append((p, answer))
        if not remote:
            return
        rt = self.rt
        nesting = rt.nested()
        if not locked:
            rt.lock.acquire()
        try:
            for p, (items, done, error) in remote:
                assert p.node is not None
                nesting.out.setdefault(p.node, []).append(
                    M.StreamItems(p.parent, p.wait, items, done, error))
            rt.comm.wake()
        finally:
            if not locked:
                rt.lock.release()

    def _timers(self) -> None:
        """Polls whose timeout passed get what there is (nothing); FileStreams polled are
        listed again."""
        while True:
            out: list[tuple[_Poll, tuple[list[bytes], bool, bytes | None]]] = []
            lend: _Poll | None = None
            with self.lock:
                while not self.stopped and not self.timers:
                    self.wake.wait()
                if self.stopped:
                    return
                at = self.timers[0][0]
                now = time.time()
                if at > now:
                    self.wake.wait(at - now)
                    continue
                _, _, s, which = heapq.heappop(self.timers)
                if which is not None:       # a task's poll still waiting: lend its slot
                    if which in s.polls:
                        lend = which
                    continue
                if s.files and s.polls and s.replay is None:
                    self._list(s)
                    self._serve(s, out)
                keep = []
                for p in s.polls:
                    if p.deadline is not None and p.deadline <= now:
                        out.append((p, self._take(s, p)))
                    else:
                        keep.append(p)
                s.polls = keep
                if s.files and keep:
                    self._timer(min([now + SCAN_EVERY] + [p.deadline for p in keep
                                                          if p.deadline is not None]), s, None)
            self._deliver(out, locked=False)
            if lend is not None and lend.node is not None:
                with self.rt.lock, self.lock:     # (still waiting: its answer is not out)
                    if any(lend in s.polls for s in self.by_id.values()):
                        self.rt.nested().lend(lend.node, lend.parent)

    def stop(self) -> None:
        """The run ends: every stream closes (a waiting poll gets what is left), and the
        spill files go."""
        out: list[tuple[_Poll, tuple[list[bytes], bool, bytes | None]]] = []
        with self.lock:
            self.stopped = True
            self.wake.notify()
            for s in self.by_id.values():
                if not s.closed:        # (its producers did not close it: not replayable)
                    self._close(s, None, out, replayable=False)
        for p, answer in out:
            if p.event is not None:
                p.answer = answer
                p.event.set()
        with self.lock:
            for s in self.by_id.values():
                if s.replay is not None:
                    s.replay.drop()
                    s.replay = None
                s.items.close()

    def _note(self, tid: int, sid: str, what: str, detail: str) -> None:
        bus = self.rt.bus
        if bus.active:
            bus.emit(StreamNote("stream", time.time(), tid, sid, "", (what, detail)))


def _add(s: StreamState, items: list[bytes], producer: int = 0) -> None:
    if not s.files:
        for blob in items:
            s.items.append(blob, producer)
        return
    for blob in items:      # a file published by name: not handed out again when listed
        if s.listing.given(os.path.basename(pickle.loads(blob))):
            s.items.append(blob, producer)


def _named(sid: str) -> Stream:
    """A stream known by its id only (a handle a task made: the master never saw it)."""
    from ..wire.streams import FileStream, _rebuild
    if sid.startswith(FILES + ":/"):
        return _rebuild(FileStream, (sid, None, sid[len(FILES) + 1:]))
    return _rebuild(Stream, (sid, None))


def _dump(exc: BaseException) -> bytes:
    try:
        blob = pickle.dumps(exc)
        pickle.loads(blob)
        return blob
    except Exception:  # noqa: BLE001 - an error that does not pickle: its text
        return pickle.dumps(StreamFailed(f"{type(exc).__name__}: {exc}"))
