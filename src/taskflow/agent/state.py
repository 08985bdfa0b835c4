"""What the parts of an agent share: functions, values held here, timings.

The loop (:mod:`.agent`), placement (:mod:`.placement`) and chaining
(:mod:`.chained`) each get this object explicitly; nothing else is shared.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

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
