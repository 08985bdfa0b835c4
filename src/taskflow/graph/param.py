"""How a task accesses one parameter: the graph's model of a direction.

A :class:`Param` is a content kind (object, file, directory, collection), a
direction, and optionally a stream, a prefix and a depth. The constants users
write (``FILE_IN``, ``INOUT``, ...) are built from it in
:mod:`taskflow.api.parameter`; the graph builder reads only this module.
"""
from __future__ import annotations

from dataclasses import dataclass

# Content kinds.
OBJECT_KIND = "object"
FILE_KIND = "file"
DIRECTORY_KIND = "directory"
COLLECTION_KIND = "collection"
STREAM_KIND = "stream"          # a taskflow.Stream / FileStream: STREAM_IN, STREAM_OUT

# Direction names.
D_IN, D_OUT, D_INOUT, D_CONCURRENT, D_COMMUTATIVE, D_IN_DELETE = (
    "IN", "OUT", "INOUT", "CONCURRENT", "COMMUTATIVE", "IN_DELETE")
READS = frozenset({D_IN, D_INOUT, D_CONCURRENT, D_COMMUTATIVE, D_IN_DELETE})
WRITES = frozenset({D_OUT, D_INOUT, D_CONCURRENT, D_COMMUTATIVE})


@dataclass(frozen=True)
class Param:
    """How a task accesses one parameter: what ``IN``, ``FILE_OUT``, ... are, and what the
    dictionary form ``{Type: ..., Direction: ..., StdIOStream: ..., Prefix: ...}`` becomes.

    Example::

        from taskflow import FILE_IN, FILE_OUT, INOUT, task, wait_on

        print(FILE_IN.kind, FILE_IN.direction, FILE_OUT.writes)   # file IN True

        @task(xs=INOUT, src=FILE_IN)
        def load(xs: list[str], src: str) -> None:
            with open(src) as f:
                xs.extend(f.read().split())

        with open("words.txt", "w") as f:
            f.write("a b c")
        words: list[str] = []
        load(words, "words.txt")
        print(wait_on(words))                             # ['a', 'b', 'c']
    """

    kind: str = OBJECT_KIND
    direction: str = D_IN
    stream: str | None = None
    prefix: str | None = None
    depth: int = 1
    elem_kind: str = OBJECT_KIND  # for collections: kind of the leaves
    name: str = ""

    @property
    def reads(self) -> bool:
        return self.direction in READS

    @property
    def writes(self) -> bool:
        return self.direction in WRITES

    def __repr__(self) -> str:
        return self.name or f"Param({self.kind}, {self.direction})"
