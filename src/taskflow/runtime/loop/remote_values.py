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
future that gets a holder is watched with a weak reference, and the names of
the nodes that may hold it are kept with the watch (every node that got it
or made it, as the callers say: the future's holders when it is watched, and
the node a chained task will find it on); when the future dies its data id
is queued (the callback only appends, so it is safe in any thread and under
any lock) and the loop thread sends ``DROP`` with the ids to those nodes
only at its next round (to every live node for an id whose nodes are not
known). With 1,024 nodes a ``DROP`` to every node for every round that
dropped something cost the master a frame per node per round; a node that
does not hold an id ignores it.
"""
from __future__ import annotations

import collections
import weakref
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from ...future import Future


EVERY_NODE = ""      # in take()'s answer: ids for every live node (where they are is unknown)


class _Watch(weakref.ref["Future"]):
    __slots__ = ("did", "where")
    did: int
    where: set[str]          # names of the nodes that may hold the value


class RemoteValues:
    def __init__(self, wake: Callable[[], None]) -> None:
        self._watched: dict[int, _Watch] = {}
        self._gone: collections.deque[_Watch] = collections.deque()
        self._wake = wake

    def watch(self, fut: Future, node: str | None = None) -> None:
        """``fut``'s value now lives on a node: its holders, and ``node`` when given (call
        whenever a node gets it: the nodes add up)."""
        did = fut._did
        w = self._watched.get(did)
        if w is None:
            w = _Watch(fut, self._died)
            w.did = did
            w.where = set()
            self._watched[did] = w
        if fut._holders:
            w.where.update(fut._holders)
        if node is not None:
            w.where.add(node)

    def _died(self, w: _Watch) -> None:
        self._gone.append(w)
        self._wake()

    def take(self) -> dict[str, list[int]]:
        """Loop thread: the ids whose futures died since the last call, by the name of
        the node to drop them on (:data:`EVERY_NODE`: on every live node)."""
        gone = self._gone
        if not gone:
            return {}
        out: dict[str, list[int]] = {}
        watched = self._watched
        while gone:
            w = gone.popleft()
            did = w.did
            if watched.get(did) is w:
                del watched[did]
            for name in w.where or (EVERY_NODE,):
                out.setdefault(name, []).append(did)
        return out

    def __len__(self) -> int:
        return len(self._watched)

    def unused(self, dids: list[int]) -> list[int]:
        """Of the values a node says it holds (one that came back: runtime/recovery/comeback.py), those
        whose futures are gone (or were never watched): to drop there."""
        watched = self._watched
        out = []
        for did in dids:
            w = watched.get(did)
            if w is None or w() is None:
                out.append(did)
        return out

    def not_on(self, node: str, held: set[int]) -> int:
        """``node`` came back holding ``held`` (runtime/recovery/comeback.py): the live values the run
        thought were there and are not (a fresh agent holds none) are not any more; how
        many. One pass over the watched values, once per return."""
        n = 0
        for did, w in self._watched.items():
            if node in w.where and did not in held:
                fut = w()
                if fut is not None:
                    fut.not_held_by(node)
                    n += 1
                w.where.discard(node)
        return n
