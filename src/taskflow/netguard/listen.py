"""The listening socket of a server reachable over the network (the web monitor,
``/metrics`` of ``taskflow run --metrics-port``, ``taskflow serve``), and how its address
is shown in a URL: one way for every server."""
from __future__ import annotations

import socket

from .limits import LISTEN_QUEUE


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` (0: any free port) and listening, not inherited
    by child processes."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(LISTEN_QUEUE)
    sock.set_inheritable(False)
    return sock


def url_host(host: str) -> str:
    """``host`` as a URL names it: a wildcard address as the loopback one (where a browser
    on this machine reaches it), an IPv6 address in brackets."""
    host = host if host not in ("0.0.0.0", "::") else "127.0.0.1"
    return f"[{host}]" if ":" in host else host
