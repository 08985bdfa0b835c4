"""A task's values as they travel: pickled, large buffers out of band.

:func:`dump` pickles a value with protocol 5. Buffers of at least
:data:`OOB_MIN` bytes (numpy arrays, ``bytes``, ``bytearray``) are kept out
of band: the result is a :class:`~.messages.Packed` whose buffers are the
value's own memory, which frames write from where it is (no copy into a
pickle, no copy into a frame). Anything else stays a plain ``bytes`` pickle,
as before. :func:`load` rebuilds the value: from a ``Packed`` it either
*takes* the buffers (the value is built on them: a numpy array over the very
memory that came down the pipe) or copies them first, when somebody else may
read the same buffers again (another task on the executor, the master's
copy that may still be sent to a node).
"""
from __future__ import annotations

import pickle
from typing import Any

from .messages import Packed, Payload

OOB_MIN = 64 * 1024      # bytes: smaller buffers stay in the pickle stream
PROTOCOL = 5
_SMALL_TYPES = frozenset({int, float, str, bool, type(None), complex})


class _OobBytes:
    """Pickles a ``bytes`` object as one out-of-band buffer (bytes has no protocol-5 form)."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __reduce_ex__(self, protocol: Any) -> tuple[Any, ...]:
        return (bytes, (pickle.PickleBuffer(self.data),))


def dump(value: Any) -> Payload:
    """``value`` pickled: a ``Packed`` when it has large buffers, else ``bytes``.

    Raises what ``pickle.dumps`` raises (the caller falls back on cloudpickle).
    """
    t = type(value)
    if t in _SMALL_TYPES:
        return pickle.dumps(value, PROTOCOL)
    bufs: list[pickle.PickleBuffer] = []
    if t is bytes:
        if len(value) < OOB_MIN:
            return pickle.dumps(value, PROTOCOL)
        head = pickle.dumps(_OobBytes(value), PROTOCOL, buffer_callback=bufs.append)
        return Packed(head, [value])     # the bytes object itself: loading it copies nothing

    def keep(buf: pickle.PickleBuffer) -> bool:
        if memoryview(buf).nbytes < OOB_MIN:
            return True             # in band
        bufs.append(buf)
        return False

    head = pickle.dumps(value, PROTOCOL, buffer_callback=keep)
    return Packed(head, bufs) if bufs else head


def load(payload: Payload, take: bool = False) -> Any:
    """The value of a payload; ``take``: build it on the payload's own buffers."""
    if type(payload) is bytes:
        return pickle.loads(payload)
    assert isinstance(payload, Packed)
    bufs = payload.bufs if take else [b if type(b) is bytes else bytearray(raw(b))
                                      for b in payload.bufs]    # (bytes: shared, immutable)
    return pickle.loads(payload.head, buffers=bufs)


def raw(buf: Any) -> memoryview:
    """A buffer's memory as flat bytes, in its own order (C or Fortran)."""
    return buf.raw() if type(buf) is pickle.PickleBuffer else memoryview(buf)


def size(payload: Payload) -> int:
    """Bytes a payload holds."""
    return len(payload)


def is_value(obj: Any) -> bool:
    """``obj`` is a payload (a node's output that carries a value)."""
    return type(obj) is bytes or type(obj) is Packed


_STD_STREAMS = {"<stdin>": "stdin", "<stdout>": "stdout", "<stderr>": "stderr"}


def std_stream(f: Any) -> tuple[Any, tuple[Any, ...]] | None:
    """How to pickle ``f`` when it is a process's standard stream (``sys.stdout``,
    ``sys.__stderr__``, ...): as the receiver's own stream of that name, so an object
    that holds one (a logger, a unittest case) travels; None for any other file (refused:
    it would arrive as a copy of its text)."""
    import sys
    for name in ("stdout", "stderr", "stdin"):
        if f is getattr(sys, name) or f is getattr(sys, f"__{name}__"):
            return getattr, (sys, name)
    attr = _STD_STREAMS.get(str(getattr(f, "name", "")))
    return (getattr, (sys, attr)) if attr else None
