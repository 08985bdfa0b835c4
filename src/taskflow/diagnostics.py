"""Diagnostics go through :mod:`logging`, under the ``taskflow`` logger.

Each module logs to ``logging.getLogger(__name__)``. Unless the program
gave the ``taskflow`` logger handlers of its own, :func:`setup` (called when
a runtime starts, and by ``taskflow run --log-level``) gives it one handler
that prints ``taskflow: message`` on stderr, warnings and worse by default
(what users saw before these messages went through logging), and stops them
from propagating, as Dask does for its ``distributed`` logger. With
``--log-level info`` or ``debug`` every line also names its level and module.
"""
from __future__ import annotations

import logging
import sys

_handler: logging.Handler | None = None


class _Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to ``sys.stderr`` as it is at each message (tests capture it)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


def setup(level: str | int | None = None) -> None:
    """Install the ``taskflow: ...`` handler (once), unless logging is configured already."""
    global _handler
    log = logging.getLogger("taskflow")
    if isinstance(level, str):
        level = getattr(logging, level.upper())
    if level is not None:
        log.setLevel(level)
    elif log.level == logging.NOTSET:
        log.setLevel(logging.WARNING)
    if _handler is None:
        if log.handlers:
            return                       # the program set up taskflow's logging: use it
        _handler = _Stderr()
        log.addHandler(_handler)
        log.propagate = False
    verbose = log.level < logging.WARNING
    _handler.setFormatter(logging.Formatter(
        "taskflow %(levelname)s %(name)s: %(message)s" if verbose else "taskflow: %(message)s"))
