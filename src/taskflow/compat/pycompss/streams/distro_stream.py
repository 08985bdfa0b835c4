"""``pycompss.streams.distro_stream``: ``ObjectDistroStream`` and ``FileDistroStream``.

PyCOMPSs's signatures over taskflow's streams (:mod:`taskflow.wire.streams`):

- ``ObjectDistroStream(alias=None, access_mode=AT_MOST_ONCE)``: ``publish``,
  ``publish_list``, ``poll(timeout)`` with ``timeout`` in milliseconds as
  PyCOMPSs's (its default: 200 ms), ``close``, ``is_closed``;
- ``FileDistroStream(alias=None, base_dir=None, access_mode=AT_MOST_ONCE)``:
  producers write files into ``base_dir`` (a ``@binary`` task given the
  stream gets the directory as its argument); ``poll()`` returns the new
  files' paths at once (its ``timeout`` is ignored, as PyCOMPSs's is);
  ``publish`` does nothing, as in PyCOMPSs (the directory is listed). Without
  an alias each ``FileDistroStream`` is a stream of its own, as in PyCOMPSs,
  even on a directory an earlier stream used (taskflow's ``FileStream`` keys
  an alias-less stream by its directory).

Both access modes deliver each item to exactly one poll of the application's
consumers (PyCOMPSs's consumers share one Kafka group; ``AT_LEAST_ONCE``
cannot deliver less than that).
"""
from __future__ import annotations

import tempfile
import uuid
from typing import Any

from ....wire.streams import FileStream, Stream

FILE = "FILE"
OBJECT = "OBJECT"
PSCO = "PSCO"
AT_MOST_ONCE = "AT_MOST_ONCE"
AT_LEAST_ONCE = "AT_LEAST_ONCE"
DEFAULT_TIMEOUT_MS = 200          # PyCOMPSs's object streams wait this long by default


class DistroStream:
    """What both of PyCOMPSs's stream classes answer."""

    def get_stream_id(self) -> str:
        return self.id          # type: ignore[attr-defined,no-any-return]

    def get_stream_alias(self) -> str | None:
        return self.alias       # type: ignore[attr-defined,no-any-return]


class ObjectDistroStream(DistroStream, Stream):
    """A stream of objects (PyCOMPSs's Kafka-backed stream)."""

    __slots__ = ()

    def __init__(self, alias: str | None = None, access_mode: str = AT_MOST_ONCE) -> None:
        _mode(access_mode)
        Stream.__init__(self, alias)

    def get_stream_type(self) -> str:
        return OBJECT

    def poll(self, timeout: float | None = DEFAULT_TIMEOUT_MS,
             group: str = "default") -> list[Any]:
        """The new objects, waiting up to ``timeout`` milliseconds for one."""
        return Stream.poll(self, None if timeout is None else float(timeout) / 1000.0, group)


class FileDistroStream(DistroStream, FileStream):
    """A stream of the files written into a directory."""

    __slots__ = ()

    def __init__(self, alias: str | None = None, base_dir: str | None = None,
                 access_mode: str = AT_MOST_ONCE) -> None:
        _mode(access_mode)
        FileStream.__init__(self, base_dir or tempfile.mkdtemp(prefix="file-stream-"), alias)
        if alias is None:       # PyCOMPSs: each stream without an alias is a new one, even
            self.id = uuid.uuid4().hex      # on a directory an earlier (closed) stream used

    def get_stream_type(self) -> str:
        return FILE

    def publish(self, message: Any) -> None:
        """Nothing to do: the files written into the directory are the stream's items."""

    def publish_list(self, messages: Any) -> None:
        """Nothing to do (see ``publish``)."""

    def poll(self, timeout: float | None = 0,
             group: str = "default") -> list[Any]:
        """The paths of the files written since the last poll (returns at once)."""
        return FileStream.poll(self, 0.0, group)


# PyCOMPSs's internal base class: importable, as applications may name it
DistroStreamImpl = DistroStream


def _mode(access_mode: str) -> None:
    if access_mode not in (AT_MOST_ONCE, AT_LEAST_ONCE):
        from ....errors import UsageError
        raise UsageError(f"access_mode={access_mode!r}: use AT_MOST_ONCE or AT_LEAST_ONCE")


__all__ = ["DistroStream", "ObjectDistroStream", "FileDistroStream", "DistroStreamImpl",
           "AT_MOST_ONCE", "AT_LEAST_ONCE", "FILE", "OBJECT", "PSCO"]
