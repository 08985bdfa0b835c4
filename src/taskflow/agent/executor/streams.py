"""Streams in a running Python task: the executor's client (wire.streams.Client).

A task's ``publish`` and ``close`` go to the master as ``StreamPublish`` /
``StreamClose`` in a NEST frame, written at once (after the task's calls held:
.nested): no answer is awaited, and
the agent forwards NEST frames before the round's results, so everything a
task published reaches the master before its end does (which closes its part).
A ``poll`` (and ``is_closed``) is a wait, as ``wait_on`` in a task is
(:meth:`.nested._Nest.ask`): a ``StreamPoll`` goes out, the task's slot is lent
meanwhile and the executor runs what its agent queues on top of the task,
until the master's ``StreamItems`` answer comes.

Slow start: a task's publishing to a stream waits for the master to have its
1st, 2nd, 4th ... :data:`SLOW_START`-th item (a poll that takes nothing, in no
group, answered once the master handled what was published before it). A
consumer polling when the first item comes has it handed over before the
producer goes on, so the first item is consumed while the producer is still
at its first few dozen, not thousands later; past them a producer writes at
once and waits for nothing (a handful of round trips per stream and task).
"""
from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from ...errors import UsageError
from ...wire import messages as M
from ...wire.streams import SYNC_GROUP

SLOW_START = 64         # items of a task to a stream up to which it syncs at powers of 2

if TYPE_CHECKING:
    from ...wire.streams import Stream
    from .nested import _Nest


class TaskStreams:
    """The streams of the tasks this executor runs."""

    def __init__(self, nest: _Nest) -> None:
        self.nest = nest
        self.tid = 0                            # the task whose publishing is counted:
        self.sent: dict[str, tuple[int, int]] = {}  # stream -> (items, next sync at)

    def publish(self, stream: Stream, items: list[bytes]) -> None:
        tid = self._task(stream, "publish")
        self.nest.send([M.StreamPublish(tid, stream.id, items)])   # (after its calls held)
        if tid != self.tid:
            self.tid = tid
            self.sent.clear()
        n, at = self.sent.get(stream.id, (0, 1))
        n += len(items)
        sync = at <= SLOW_START and n >= at     # (slow start: see the module)
        while sync and at <= n:
            at *= 2
        self.sent[stream.id] = (n, at)
        if sync:
            self.poll(stream, SYNC_GROUP, 0.0, False)

    def close(self, stream: Stream) -> None:
        tid = self._task(stream, "close")
        self.nest.send([M.StreamClose(tid, stream.id)])

    def poll(self, stream: Stream, group: str, timeout: float | None,
             take: bool) -> tuple[list[bytes], bool, bytes | None]:
        tid = self._task(stream, "poll" if take else "is_closed")
        sid = stream.id
        answer = self.nest.ask(lambda wid: M.StreamPoll(tid, wid, sid, group, timeout, take))
        assert type(answer) is M.StreamItems
        return answer.items, answer.closed, answer.error

    def _task(self, stream: Stream, what: str) -> int:
        nest = self.nest
        if threading.get_ident() != nest.ident:
            raise UsageError(
                f"{stream.where}: {what}() was called from a thread that task {nest.cur.tid} "
                f"started: a task uses its streams from its own thread only (hand the items "
                f"to that thread, e.g. through a queue.Queue)")
        return nest.cur.tid
