"""uvicorn with the bounds a server reachable by strangers needs (``taskflow serve``, the
web monitor); the dial-back port shares its log summary.

  limits.py    every bound, defined once (deadlines, counts, the body's limit)
  guard.py     the connections counted per address, and whom one more closes
  protocol.py  uvicorn's h11 protocol with the deadlines, one request at a time
  gate.py      ASGI middleware: the token on the head, then a bounded body
  summary.py   refused strangers said once per address per minute
  listen.py    the listening socket, and its address as a URL shows it

This package's own modules import uvicorn only in ``protocol.py`` (loaded by
:func:`config`), so the dial-back port can use :mod:`.summary` without it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .guard import Guard
from .limits import (BODY_TIMEOUT, HEAD_TIMEOUT, KEEP_ALIVE, LISTEN_QUEUE, MAX_BODY, MAX_OPEN,
                     MAX_WAITING, PER_CLIENT, PER_CLIENT_OPEN, SEND_TIMEOUT)
from .listen import listen, url_host
from .summary import Summary

if TYPE_CHECKING:
    import uvicorn

__all__ = ["Guard", "Summary", "config", "server", "listen", "url_host", "BODY_TIMEOUT",
           "HEAD_TIMEOUT", "KEEP_ALIVE", "LISTEN_QUEUE", "MAX_BODY", "MAX_OPEN", "MAX_WAITING",
           "PER_CLIENT", "PER_CLIENT_OPEN", "SEND_TIMEOUT"]


def config(app: Any, guard: Guard, **kw: Any) -> uvicorn.Config:
    """A uvicorn configuration for ``app`` behind ``guard`` (:func:`.protocol.config`)."""
    from .protocol import config as make
    return make(app, guard, **kw)


def server(config: uvicorn.Config) -> uvicorn.Server:
    """uvicorn's server for ``config``, accepting in small batches
    (:func:`.protocol.server_class`)."""
    from .protocol import server_class
    return server_class()(config)
