"""Values kept on nodes, dropped there once the master has no use for them.

A node keeps a value in its agent's store when it is too large to travel
with the result (``("held", ...)``), when the master pushed it there for a
task, or when a task queued on that node waits for it. Without a word from
the master those values stay until the run ends: a long workflow whose
tasks pass large arrays along fills the nodes' memory with values nobody can
ask for any more.

The master knows when that is: when the value's :class:`Future` is gone.
Futures are referenced by the caller, by the tasks that read them (until
those end), by the object registry and by lineage records, so a future
that is garbage can no longer be waited on nor passed to a task. Each
future that first gets a holder is watched with a weak reference; when it
dies its data id is queued (the callback only appends, so it is safe in
any thread and under any lock) and the loop thread sends ``DROP`` with the
ids to every live node at its next round. A node that does not hold an id
ignores it.
"""
from __future__ import annotations

import collections
import weakref
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from ..future import Future


class _Watch(weakref.ref["Future"]):
    __slots__ = ("did",)
    did: int


class RemoteValues:
    def __init__(self, wake: Callable[[], None]) -> None:
        self._watched: dict[int, _Watch] = {}
        self._gone: collections.deque[int] = collections.deque()
        self._wake = wake

    def watch(self, fut: Future) -> None:
        """``fut``'s value now lives on a node (call when its first holder is set)."""
        did = fut._did
        if did in self._watched:
            return
        w = _Watch(fut, self._died)
        w.did = did
        self._watched[did] = w

    def _died(self, w: _Watch) -> None:
        self._gone.append(w.did)
        self._wake()

    def take(self) -> list[int]:
        """Loop thread: the ids whose futures died since the last call."""
        gone = self._gone
        if not gone:
            return []
        out = []
        watched = self._watched
        while gone:
            did = gone.popleft()
            watched.pop(did, None)
            out.append(did)
        return out

    def __len__(self) -> int:
        return len(self._watched)
