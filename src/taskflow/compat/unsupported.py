"""PyCOMPSs pieces taskflow does not provide: each fails loudly where it is used.

A decorator fails when the application declares a task with it; a module
fails when it is imported (an ``ImportError``, so an application that
imports it optionally still takes its fallback). The message names the
piece, says it is not supported and what to do instead.
"""
from __future__ import annotations

from typing import Any, NoReturn

from ..errors import UsageError

DOC = "docs/compat-pycompss.md lists what the layer supports"


class NotSupported(UsageError):
    """A PyCOMPSs feature taskflow's layer does not provide."""


class NotSupportedImport(ImportError):
    """A PyCOMPSs module taskflow's layer does not provide."""


def decorator(name: str, what: str, instead: str) -> type:
    """A PyCOMPSs decorator class that refuses to be used."""

    class _Refused:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise NotSupported(f"@{name} ({what}) is not supported by taskflow's PyCOMPSs "
                               f"layer; {instead} ({DOC}).")

    _Refused.__name__ = _Refused.__qualname__ = name
    return _Refused


def module(name: str, what: str, instead: str) -> NoReturn:
    raise NotSupportedImport(f"{name} ({what}) is not supported by taskflow's PyCOMPSs layer; "
                             f"{instead} ({DOC}).", name=name)
