"""The runtime the API functions talk to: set by ``Runtime.start``, cleared when it stops.

Only the record of which runtime is current, and the program's stream client that
goes with it; starting the embedded default when there is none is :mod:`.embedded`'s
(it needs the runtime itself, which records itself here).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from ..wire.streams import Stream
    from .runtime import Runtime
    from .streams import Streams

_current: Runtime | None = None     # read directly by the task call (api.task): no call


def set_current(rt: Runtime) -> None:
    global _current
    _current = rt
    from ..context import set_streams
    set_streams(ProgramClient(rt.stream_registry))    # the program's streams go to this run


def clear_current(rt: Runtime) -> None:
    global _current
    if _current is rt:
        _current = None
        from ..context import set_streams
        set_streams(None)


def get() -> Runtime | None:
    return _current


class ProgramClient:
    """The main program's stream client (wire.streams.Client): straight to the run's
    registry (:mod:`.streams`, loaded at the program's first use of a stream, not at every
    run's start: ~5-10 ms of imports before the first result)."""

    def __init__(self, registry: Callable[[], Streams]) -> None:
        self.registry = registry

    def publish(self, stream: Stream, items: list[bytes]) -> None:
        self.registry().publish(stream, items)

    def close(self, stream: Stream) -> None:
        self.registry().close(stream)

    def poll(self, stream: Stream, group: str, timeout: float | None,
             take: bool) -> tuple[list[bytes], bool, bytes | None]:
        return self.registry().poll(stream, group, timeout, take)
