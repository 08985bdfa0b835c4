"""HTTP services a PyCOMPSs run may call (``@http(service_name=...)``).

Filled from the ``<Http BaseUrl=...><ServiceName>`` entries of the
resources file (``--resources``), or by :func:`set_services` directly; a
service name with several base URLs uses them in turn.
"""
from __future__ import annotations

import itertools
import threading

from ..errors import UsageError

_services: dict[str, list[str]] = {}
_turn: dict[str, itertools.cycle[str]] = {}
_lock = threading.Lock()


def set_services(services: dict[str, list[str]]) -> None:
    with _lock:
        _services.clear()
        _turn.clear()
        for name, urls in services.items():
            _services[name] = list(urls)
            _turn[name] = itertools.cycle(list(urls))


def base_url(service: str, where: str) -> str:
    """The next base URL of ``service`` (UsageError naming the task when it is unknown)."""
    with _lock:
        cyc = _turn.get(service)
        if cyc is None:
            known = ", ".join(sorted(_services)) or "none"
            raise UsageError(
                f"{where}: no HTTP resource offers service {service!r} (known: {known}). "
                f"List it in the resources file given with --resources: "
                f"<Http BaseUrl=\"http://host:port/path/\"><ServiceName>{service}"
                f"</ServiceName></Http>.")
        return next(cyc)
