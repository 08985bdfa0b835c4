"""What the parts of an agent share: functions, values held here, timings.

The loop (:mod:`.agent`), placement (:mod:`.placement`) and chaining
(:mod:`.chained`) each get this object explicitly; nothing else is shared.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Container

from ..wire import messages as M
from .store import ValueStore

if TYPE_CHECKING:
    from .pool import Executor


class NodeState:
    __slots__ = ("funcs", "codes", "keys", "store", "mean", "producing", "deadlines", "started")

    def __init__(self) -> None:
        self.funcs: dict[bytes, bytes] = {}        # digest -> pickled function (FUNC frames)
        self.codes: dict[bytes, bytes] = {}        # digest -> its code's (adoptable runs)
        self.keys: dict[int, bytes] = {}           # task id -> key of keyed calls (KEYS)
        self.store = ValueStore()                  # data id -> value kept on this node
        self.mean: dict[bytes, float] = {}         # digest -> mean duration here
        self.producing: dict[int, Executor] = {}   # data id -> executor whose queue makes it
        self.deadlines: dict[int, tuple[float, Executor]] = {}   # task id -> (end, executor)
        self.started: list[tuple[int, float]] = []   # (task id, time) for STARTED, this round

    def forget_keys(self, results: list[M.ResultWire]) -> None:
        """Keys of calls that ended (reported) are not needed any more."""
        keys = self.keys
        for r in results:
            keys.pop(M.ResultMsg(*r).task_id, None)

    def keep_only(self, tasks: Container[int], values: Container[int]) -> None:
        """A resumed master adopts the agent: of what the earlier run left here (values it
        pushed or that stayed here, keys of its calls) only what the tasks kept for it
        (``tasks``) and the values they make (``values``) mean anything to the new one."""
        store = self.store
        for did in [d for d in store if d not in values]:
            store.pop(did)
        self.producing.clear()
        self.keys = {t: k for t, k in self.keys.items() if t in tasks}
