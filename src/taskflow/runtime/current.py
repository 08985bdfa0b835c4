"""The runtime the API functions talk to: set by ``Runtime.start``, cleared when it stops.

Only the record of which runtime is current; starting the embedded default
when there is none is :mod:`.embedded`'s (it needs the runtime itself, which
records itself here).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .runtime import Runtime

_current: Runtime | None = None     # read directly by the task call (api.task): no call


def set_current(rt: Runtime) -> None:
    global _current
    _current = rt
    from ..context import set_streams
    from .streams import ProgramClient
    set_streams(ProgramClient(rt.stream_registry))    # the program's streams go to this run


def clear_current(rt: Runtime) -> None:
    global _current
    if _current is rt:
        _current = None
        from ..context import set_streams
        set_streams(None)


def get() -> Runtime | None:
    return _current
