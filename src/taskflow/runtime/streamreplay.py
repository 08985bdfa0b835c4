"""A resumed run's streams that closed in the earlier run: replayed, not produced again.

A resumable run keeps every item of its streams in its directory (``streams/``,
one file per stream: :mod:`.streamitems`), with a close frame when a stream
closed well and only tasks produced it. When a resumed run first uses a
stream of the same id (an alias, a FileStream's directory, or the main
program's n-th stream without an alias), the earlier file is checked and
copied (:func:`.streamitems.read_closed`) and the stream waits, *pending*:

- each producer task it had in the earlier run (by name and resume key: a
  child's ordinal changes with its parents' pace, its key does not) that is
  called again is restored from the resume log as any finished call is, and
  publishes nothing; once all of them are, the stream is *replayed*: it is
  closed with the earlier items, and consumers poll them from the first;
- a producer that is not restored (its call changed, its record is missing or
  damaged, it also polls a stream) runs again: the stream is produced anew,
  from the items of the producers restored before (each item's frame names its
  producer: theirs are given again, in their order) and what the others
  publish now; so is a stream that did not close in the earlier run or whose
  file is damaged (said in the journal's log);
- a consumer task that ended well in the earlier run (its *took* frame in the
  kept file says which items each of its consumer groups took) is restored
  from the resume log too, once every stream it polls is replayed (its key
  names its streams; a replay is their earlier items, checked): called while
  a replay is pending, one that ended after the stream closed waits, gated
  (:meth:`StreamReplays.restore`), and runs after all when a stream is
  produced anew instead (one that ended before may be what the program waits
  for before calling the producers: it runs again). The items a restored
  consumer took are skipped for its groups (:func:`skip`): the consumers that
  run again, and the program, get the others, so every item still reaches one
  poll per group. One whose items went to another poll of its group in this
  run already runs again (said); so does every consumer of a stream not
  replayed, and a task that polls one stream and produces another.
"""
from __future__ import annotations

import hashlib
import logging
import os
import pickle
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, NamedTuple, Protocol

from ..events import NodeNote, Resumed
from ..graph import task as T
from ..wire.streams import OBJECTS
from .streamitems import Closed, Items, Ranges, read_closed

if TYPE_CHECKING:
    from ..graph.task import Task

log = logging.getLogger(__name__)

REPLAY_SUFFIX = ".replay"       # a pending replay's copy, until it is replayed or dropped


def kept_path(directory: str, sid: str) -> str:
    """The file of stream ``sid`` in a run's ``streams/`` directory."""
    return os.path.join(directory, hashlib.sha256(sid.encode()).hexdigest()[:32] + ".items")


class Replay:
    """A stream that closed in the earlier run, while this run's producers are called."""

    def __init__(self, items: Items, closed: Closed, source: str) -> None:
        self.items = items                          # the earlier items (a checked copy)
        # (name, key) of each producer -> its numbers there (its items' frames have them;
        # calls alike share a key: each restored one takes one of their numbers)
        self.producers: dict[tuple[str, Any], list[int]] = {}
        for n, name, key in closed.producers:
            self.producers.setdefault((name, key), []).append(n)
        self.count = len(closed.producers)
        self.restored: dict[int, int] = {}      # ... restored so far: -> its number here
        self.source = source                        # the earlier run's directory

    @property
    def complete(self) -> bool:
        return len(self.restored) >= self.count

    def drop(self) -> None:
        """Not replayed: the copy goes."""
        path = self.items.spill_path
        self.items.close()
        try:
            os.unlink(path)
        except OSError:
            pass

    def take(self, path: str) -> Items:
        """Replayed: the copy becomes this run's file of the stream (``path``)."""
        os.replace(self.items.spill_path, path)
        self.items.spill_path = path
        return self.items


def find(earlier_dir: str, path: str, sid: str, run: str) -> Replay | str | None:
    """The replay of stream ``sid`` from the earlier run's ``streams/`` directory
    (``run``: that run's directory), copied next to ``path``; why not (one line); None:
    that run kept no such stream."""
    old = kept_path(earlier_dir, sid)
    if not os.path.exists(old):
        return None
    got = read_closed(old, sid, path + REPLAY_SUFFIX)
    if isinstance(got, str):
        return got
    for fpath, size, mtime in got[1].files:      # a FileStream's files: still as they were
        try:
            st = os.stat(fpath)
            same = (st.st_size, st.st_mtime_ns) == (size, mtime)
        except OSError:
            same = False
        if not same:
            got[0].close()
            os.unlink(got[0].spill_path)
            return f"its file {fpath} was changed or removed since"
    return Replay(got[0], got[1], run)


class _Run(Protocol):
    """What the replays use of the run (its state: runtime.state imports streams.py)."""

    bus: Any
    lock: Any
    scheduler: Any
    comm: Any


class Held(NamedTuple):
    """A consumer task called while the replay of a stream it polls is pending: gated
    (one more input it waits for) until every such stream is replayed or not."""

    task: Task
    restore: Callable[..., bool]       # from the resume log (listed=True: its row is made)
    pending: set[str]                   # the ids of the streams whose replay it waits for


def stable(sid: str) -> bool:
    """Whether stream ``sid`` is the same in a resumed run: an alias, a FileStream's
    directory, the program's n-th (``objects#n``); not a random id (made by a task)."""
    return ":" in sid or sid.startswith(OBJECTS + "#")


def skip(s: Any, ranges: Ranges) -> None:
    """The items a restored consumer took in the earlier run: not given again to its
    groups (the streams' state skips them: :func:`past`)."""
    for group, first, end in ranges:
        s.skip.setdefault(group, []).append((first, end))
        s.skip[group].sort()


def past(s: Any, group: str, at: int) -> int:
    """Where ``group`` reads next from ``at``: past the items restored consumers took."""
    sk = s.skip.get(group)
    while sk and sk[0][0] <= at:
        at = max(at, sk.pop(0)[1])
    return at


def clash(s: Any, ranges: Ranges) -> str | None:
    """A group of ``ranges`` that already read past their first item in this run (those
    items went to another poll: a consumer restored with them would have them twice)."""
    for group, first, _ in ranges:
        if s.groups.get(group, first) > first:
            return group
    return None


class StreamReplays:
    """The resumed run's side of the run's streams (:class:`.streams.Streams` is one)."""

    rt: _Run
    lock: threading.Lock
    by_task: dict[int, list[tuple[Any, str, str]]]
    by_id: dict[str, Any]
    held: dict[int, Held]               # consumer task id -> waiting for replays
    consumed: set[tuple[str, bytes]]    # (stream id, key) of the consumers restored
    freed: list[tuple[Task, str]]       # held consumers to run after all: (task, why)

    def _deliver(self, out: list[Any], locked: bool) -> None: ...

    def _serve(self, s: Any, out: list[Any]) -> None: ...

    def _note(self, tid: int, sid: str, what: str, detail: str) -> None: ...

    def restore(self, task: Task, restore: Callable[[], bool]) -> bool:
        """Under the run's lock, at a call of a resumed run: ``task`` used streams; it is
        restored (``restore()``: from the resume log) when it only produces streams whose
        replay is pending and it was one of their producers in the earlier run; then a
        stream whose producers all were is replayed. Else it runs again (True: restored)."""
        uses = self.by_task.get(task.id) or []
        me = (task.spec.name, task.key)
        for s, _, pname in uses:
            if not stable(s.id):
                self._rerun(task, f"stream {s.name} (parameter '{pname}') has a new id in "
                                  f"every run (a stream a task made without an alias, or a "
                                  f"FileDistroStream without one): it is never replayed, so "
                                  f"the tasks given it run again; give it an alias to have "
                                  f"it replayed and them restored")
                return False
        if uses and all(role == "consumer" for _, role, _ in uses):
            return self._consumer(task, uses, restore)
        why = ""
        for s, role, pname in uses:
            if role != "producer":
                why = f"it polls stream {s.name} (parameter '{pname}'): consumers run again"
            elif s.replay is None:
                why = (f"stream {s.name} (parameter '{pname}') did not close in the earlier "
                       f"run, or its items were not kept: its producers run again")
            elif not s.replay.producers.get(me):
                why = (f"it did not produce stream {s.name} in the earlier run (no producer "
                       f"had its call there)")
            if why:
                break
        ok = not why and bool(uses)
        if ok:
            del self.by_task[task.id]       # (restored: its end closes no part)
            ok = restore()          # (when not: the resumer says why it runs again)
            if not ok:
                self.by_task[task.id] = uses
        out: list[Any] = []
        with self.lock:
            for s, role, _ in uses:
                if role != "producer" or s.replay is None:
                    continue
                if not ok:
                    self._said(logging.WARNING, f"stream {s.name} is not replayed: its "
                               f"producer task {task.spec.name} (id {task.id}) runs again "
                               f"({why or 'its call is not restored: see its reason'})")
                    self._unreplay(s, out)
                    continue
                number = s.numbers.get(task.id, 0)
                s.parts.pop(task.id, None)
                s.producers.pop(task.id, None)
                s.restored.append((number, *me))
                s.replay.restored[s.replay.producers[me].pop(0)] = number
                if s.replay.complete and not any(s.parts.values()):
                    self._replayed(s, out)
        self._deliver(out, locked=True)
        if not ok and why:
            self._rerun(task, why)
        return ok

    def _replayed(self, s: Any, out: list[Any]) -> None:
        """Every producer ``s`` had in the earlier run was restored: closed with its items."""
        replay = s.replay
        assert replay is not None
        s.items.close()
        s.items = replay.take(s.items.spill_path)
        s.replay = None
        s.replayed = True
        if s.files:             # (listed again: not new)
            s.listing.replayed([pickle.loads(s.items.get(i)) for i in range(s.items.end)])
        s.closed = True
        s.parts = {}
        self._note(0, s.id, "close", f"{s.items.end} ")
        self._said(logging.INFO, f"stream {s.name} is replayed: {s.items.end} item(s) kept by "
                   f"run {os.path.basename(replay.source)}, its {replay.count} "
                   f"producer task(s) restored; the consumers that run poll them from the "
                   f"first but for those restored consumers took")
        held, s.held = s.held, []
        for tid in held:            # (before any poll is served: their items are skipped)
            h = self.held.get(tid)
            if h is not None:
                h.pending.discard(s.id)
                if not h.pending:
                    del self.held[tid]
                    self._decide(h)
        if held:
            self.rt.comm.wake()         # (what waits for a restored consumer may go)
        self._serve(s, out)

    def _unreplay(self, s: Any, out: list[Any]) -> None:
        """``s`` is not replayed after all: produced anew, from the earlier items of the
        producers restored so far (they publish nothing now), in their order."""
        replay = s.replay
        s.replay = None
        tags = replay.items.tags
        given = 0
        earlier = range(replay.items.end)
        if not replay.restored:         # (none restored: none of its earlier items is given)
            pass
        elif s.files:           # (the restored ones' files as they were; the others' not)
            for path, number in s.listing.reopened(
                    replay.restored, [tags[i] for i in earlier],
                    [pickle.loads(replay.items.get(i)) for i in earlier]):
                s.items.append(pickle.dumps(path), number)
                given += 1
        else:
            for i in earlier:
                number = replay.restored.get(tags[i])
                if number is not None:
                    s.items.append(replay.items.get(i), number)
                    given += 1
        replay.drop()
        self._free(s, f"stream {s.name} is not replayed but produced anew (see the run's log)")
        if given:
            self._said(logging.INFO, f"stream {s.name}: the {given} item(s) its "
                       f"{len(replay.restored)} restored producer task(s) published in run "
                       f"{os.path.basename(replay.source)} are given again")
            self._serve(s, out)

    def pending_at_end(self, s: Any, out: list[Any]) -> None:
        """The program ended while ``s`` waited for its replay: producers it had in the
        earlier run were not called. With some restored, it is produced anew from their
        items and closes once the producers called are done (as any stream does)."""
        if s.replay is not None and s.replay.restored:
            self._unreplay(s, out)
            if not any(s.parts.values()):
                self._close(s, None, out)
        self._free(s, f"the program ended before calling every producer stream {s.name} had "
                      f"in the earlier run: it is not replayed")

    # -- consumers ---------------------------------------------------------------------------
    def _consumer(self, task: Task, uses: list[tuple[Any, str, str]],
                  restore: Callable[..., bool]) -> bool:
        """At the call of ``task``, which polls streams and produces none: restored now
        when all of them are replayed, gated while some replay is pending (its inputs
        still count: :meth:`_decide` acts once they are all replayed), else it runs."""
        resumer = getattr(getattr(self.rt, "recovery", None), "resumer", None)
        if resumer is None or task.key not in resumer.store.by_key:
            return restore()            # (no record: the resumer says why it runs again)
        why = ""
        pending = []
        with self.lock:
            for s, _, pname in uses:
                items = s.replay.items if s.replay is not None else s.items
                took = items.consumers or {}
                if s.replay is None and not s.replayed:
                    why = (f"stream {s.name} (parameter '{pname}') is not replayed (see the "
                           f"run's log): its consumers run again")
                elif task.key not in took:
                    why = (f"it did not end well as a consumer of stream {s.name} (parameter "
                           f"'{pname}') in the earlier run (no record of the items it took)")
                elif took[task.key] is None or (s.id, task.key) in self.consumed:
                    why = (f"another consumer of stream {s.name} (parameter '{pname}') had the "
                           f"same call (function and arguments): which items each took cannot "
                           f"be told apart; give them different arguments to restore them")
                elif s.replay is not None and task.key not in items.after_close:
                    why = (f"it was called before stream {s.name} (parameter '{pname}') was "
                           f"replayed and it ended before the stream closed in the earlier "
                           f"run: the program may wait for it before calling the stream's "
                           f"producers, so it is not held for the replay")
                elif s.replay is not None:
                    pending.append(s)
                elif clash(s, took[task.key]) is not None:
                    why = self._clashed(s, pname, took[task.key])
                if why:
                    break
            if not why and pending:
                self.held[task.id] = Held(task, restore, {s.id for s in pending})
                for s in pending:
                    s.held.append(task.id)
                task.npending += 1      # (a gate: the call goes on to the graph, not ready)
                return False
            if not why:         # (under the lock: no poll takes its items meanwhile)
                return self._restored(task, uses, restore)
        self._rerun(task, why)
        return False

    @staticmethod
    def _clashed(s: Any, pname: str, ranges: Ranges) -> str:
        return (f"the items of stream {s.name} (parameter '{pname}') it took in the earlier "
                f"run went to another poll of its group '{clash(s, ranges)}' in this run")

    def _restored(self, task: Task, uses: list[tuple[Any, str, str]],
                  restore: Callable[[], bool]) -> bool:
        """Under self.lock (and the run's): restore consumer ``task`` from the resume log
        (``restore``); its streams skip what it took, and keep that it did (for a resume of
        this run). (Its end touches no stream, so the lock is not taken again.)"""
        del self.by_task[task.id]
        if not restore():
            self.by_task[task.id] = uses
            return False
        key = task.key
        assert key is not None
        for s, _, _ in uses:
            ranges = (s.items.consumers or {})[key]
            assert ranges is not None
            skip(s, ranges)
            self.consumed.add((s.id, key))
            s.items.took(key, task.spec.name, ranges)
        return True

    def _decide(self, h: Held) -> None:
        """Every stream held consumer ``h.task`` polls is replayed (the run's lock and
        self.lock held): restored, or (its record damaged, its items served) it runs."""
        task = h.task
        if task.state is not T.SUBMITTED:       # (cancelled meanwhile)
            return
        uses = self.by_task.get(task.id) or []
        for s, _, pname in uses:
            ranges = (s.items.consumers or {}).get(task.key or b"")
            if ranges is None or (s.id, task.key) in self.consumed:
                self._rerun(task, f"another consumer of stream {s.name} (parameter '{pname}') "
                                  f"had the same call: which items each took cannot be told "
                                  f"apart; give them different arguments to restore them")
                self._ungate(task)
                return
            if clash(s, ranges) is not None:
                self._rerun(task, self._clashed(s, pname, ranges))
                self._ungate(task)
                return
        if not self._restored(task, uses, lambda: h.restore(listed=True)):
            self._ungate(task)

    def _free(self, s: Any, why: str) -> None:
        """``s`` is not replayed (self.lock held): the consumers held for it run, after
        the locks are let go (:meth:`settle`)."""
        held, s.held = s.held, []
        for tid in held:
            h = self.held.pop(tid, None)
            if h is not None:
                for other in self.by_id.values():       # (no longer held by the others)
                    if tid in other.held:
                        other.held.remove(tid)
                self.freed.append((h.task, why))

    def _key(self, task: Task) -> bytes | None:
        """The resume key of ``task`` (a consumer that ended well, a producer of a stream
        that closed: kept under it), computed now if it waited (graph.keys); None: it
        cannot be (it runs again on a resume)."""
        keys = getattr(self.rt, "keys", None)
        if task.key is not None or keys is None or not task.ordinal:
            return task.key
        try:
            key: bytes = keys.waited(task, settle=False)
        except Exception:  # noqa: BLE001 - KeyUnknown: no record of what it took, said then
            return None
        return key

    def settle(self, locked: bool) -> None:
        """The held consumers freed run (``locked``: the caller holds the run's lock)."""
        with self.lock:
            freed, self.freed = self.freed, []
        if not freed:
            return
        if not locked:
            self.rt.lock.acquire()
        try:
            for task, why in freed:
                if task.state is T.SUBMITTED:
                    self._rerun(task, why)
                    self._ungate(task)
        finally:
            if not locked:
                self.rt.lock.release()

    def _ungate(self, task: Task) -> None:
        """A held consumer runs (the run's lock held): its gate is lifted."""
        task.npending -= 1
        if task.state is T.SUBMITTED and task.npending == 0:
            task.state = T.READY
            self.rt.scheduler.push(task)
            self.rt.comm.wake()

    def _close(self, s: Any, error: BaseException | None, out: list[Any],
               replayable: bool = True) -> None: ...

    def _said(self, level: int, text: str) -> None:
        log.log(level, "%s", text)
        if self.rt.bus.active:      # (in the journal's logs, as the run's own line)
            self.rt.bus.emit(NodeNote("log", time.time(), 0, "", "", ("TASKFLOW", text)))

    def _rerun(self, task: Task, why: str) -> None:
        resumer = getattr(getattr(self.rt, "recovery", None), "resumer", None)
        if resumer is not None:
            counts = resumer.reruns.setdefault(task.spec.name, {})
            counts[why] = counts.get(why, 0) + 1
        bus = self.rt.bus
        if bus.active:
            bus.emit(Resumed("rerun", time.time(), task.id, task.spec.name, "", why))



def closed_frame(s: Any, error: BaseException | None,
                 key: Callable[[Task], bytes | None]) -> Closed | None:
    """The close frame of ``s`` (a resumed run replays it), or None when it cannot be
    replayed: closed with an error, produced by the program, or a FileStream one of
    whose files is gone (a FileStream's records its files' sizes and times)."""
    if error is not None or 0 in s.parts or not (s.producers or s.restored):
        return None
    producers = tuple(s.restored) + tuple(
        (s.numbers.get(tid, 0), t.spec.name, key(t)) for tid, t in s.producers.items())
    if any(k is None for _, _, k in producers):
        return None
    files = []
    if s.files:
        for name in sorted(s.listing.taken):           # (every file handed out)
            path = os.path.join(s.base_dir, name)
            try:
                st = os.stat(path)
            except OSError:
                return None
            files.append((path, st.st_size, st.st_mtime_ns))
    return Closed(s.id, s.items.end, producers, tuple(files))
