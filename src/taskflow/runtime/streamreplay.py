"""A resumed run's streams that closed in the earlier run: replayed, not produced again.

A resumable run keeps every item of its streams in its directory (``streams/``,
one file per stream: :mod:`.streamitems`), with a close frame when a stream
closed well and only tasks produced it. When a resumed run first uses a
stream of the same id (an alias, a FileStream's directory, or the main
program's n-th stream without an alias), the earlier file is checked and
copied (:func:`.streamitems.read_closed`) and the stream waits, *pending*:

- each producer task it had in the earlier run (by name and ordinal) that is
  called again is restored from the resume log as any finished call is, and
  publishes nothing; once all of them are, the stream is *replayed*: it is
  closed with the earlier items, and consumers poll them from the first;
- a producer that is not restored (its call changed, its record is missing or
  damaged, it also polls a stream) runs again: the stream is produced anew,
  from the items of the producers restored before (each item's frame names its
  producer: theirs are given again, in their order) and what the others
  publish now; so is a stream that did not close in the earlier run or whose
  file is damaged (said in the journal's log);
- consumer tasks always run again (a consumer group's items are shared by its
  consumers: only giving every item again keeps "exactly once").
"""
from __future__ import annotations

import hashlib
import logging
import os
import pickle
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ..events import NodeNote, Resumed
from .streamitems import Closed, Items, read_closed

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
        # (name, ordinal) of each producer -> its number there (its items' frames have it)
        self.producers = {(name, o): n for n, name, o in closed.producers}
        self.restored: dict[int, int] = {}      # ... restored so far: -> its number here
        self.source = source                        # the earlier run's directory

    @property
    def complete(self) -> bool:
        return len(self.restored) >= len(self.producers)

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


class StreamReplays:
    """The resumed run's side of the run's streams (:class:`.streams.Streams` is one)."""

    rt: _Run
    lock: threading.Lock
    by_task: dict[int, list[tuple[Any, str, str]]]

    def _deliver(self, out: list[Any], locked: bool) -> None: ...

    def _serve(self, s: Any, out: list[Any]) -> None: ...

    def _note(self, tid: int, sid: str, what: str, detail: str) -> None: ...

    def restore(self, task: Task, restore: Callable[[], bool]) -> bool:
        """Under the run's lock, at a call of a resumed run: ``task`` used streams; it is
        restored (``restore()``: from the resume log) when it only produces streams whose
        replay is pending and it was one of their producers in the earlier run; then a
        stream whose producers all were is replayed. Else it runs again (True: restored)."""
        uses = self.by_task.get(task.id) or []
        me = (task.spec.name, task.ordinal)
        why = ""
        for s, role, pname in uses:
            if role != "producer":
                why = f"it polls stream {s.name} (parameter '{pname}'): consumers run again"
            elif s.replay is None:
                why = (f"stream {s.name} (parameter '{pname}') did not close in the earlier "
                       f"run, or its items were not kept: its producers run again")
            elif me not in s.replay.producers:
                why = f"it did not produce stream {s.name} in the earlier run"
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
                s.replay.restored[s.replay.producers[me]] = number
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
            s.taken.update(os.path.basename(pickle.loads(s.items.get(i)))
                           for i in range(s.items.end))
        s.closed = True
        s.parts = {}
        self._note(0, s.id, "close", f"{s.items.end} ")
        self._said(logging.INFO, f"stream {s.name} is replayed: {s.items.end} item(s) kept by "
                   f"run {os.path.basename(replay.source)}, its {len(replay.producers)} "
                   f"producer task(s) restored; its consumers poll them from the first")
        self._serve(s, out)

    def _unreplay(self, s: Any, out: list[Any]) -> None:
        """``s`` is not replayed after all: produced anew, from the earlier items of the
        producers restored so far (they publish nothing now), in their order."""
        replay = s.replay
        s.replay = None
        tags = replay.items.tags
        given = 0
        for i in range(replay.items.end) if replay.restored else ():
            number = replay.restored.get(tags[i])
            if number is not None:
                s.items.append(replay.items.get(i), number)
                given += 1
        replay.drop()
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



def closed_frame(s: Any, error: BaseException | None) -> Closed | None:
    """The close frame of ``s`` (a resumed run replays it), or None when it cannot be
    replayed: closed with an error, produced by the program, or a FileStream one of
    whose files is gone (a FileStream's records its files' sizes and times)."""
    if error is not None or 0 in s.parts or not (s.producers or s.restored):
        return None
    producers = tuple(s.restored) + tuple(
        (s.numbers.get(tid, 0), t.spec.name, t.ordinal) for tid, t in s.producers.items())
    if any(not o for _, _, o in producers):
        return None
    files = []
    if s.files:
        for name in sorted(s.taken):           # (every file handed out)
            path = os.path.join(s.base_dir, name)
            try:
                st = os.stat(path)
            except OSError:
                return None
            files.append((path, st.st_size, st.st_mtime_ns))
    return Closed(s.id, s.items.end, producers, tuple(files))
