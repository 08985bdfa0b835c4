"""``pycompss.streams.distro_stream``: the stream classes; creating one is an error here."""
from __future__ import annotations

from typing import Any

from ...unsupported import NotSupported

_WHY = ("distributed streams are not supported by taskflow's PyCOMPSs layer; exchange the "
        "data through files (FILE_OUT / FILE_IN) or task results (docs/compat-pycompss.md)")


class DistroStream:
    """A distributed stream: not supported (creating one raises NotSupported)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise NotSupported(f"{type(self).__name__}: {_WHY}.")


class ObjectDistroStream(DistroStream):
    pass


class FileDistroStream(DistroStream):
    pass


class DistroStreamImpl(DistroStream):
    pass


__all__ = ["DistroStream", "ObjectDistroStream", "FileDistroStream", "DistroStreamImpl"]
