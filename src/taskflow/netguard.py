"""uvicorn with the bounds a server reachable by strangers needs (``taskflow serve``, the
web monitor).

uvicorn alone waits forever for a connection that sends nothing, and its
``limit_concurrency`` counts idle connections: 150 silent sockets, or 200
requests sent one byte at a time, made every request answer 503. Here:

* **head deadline**: a request's line and headers must have arrived
  ``head_timeout`` s after the connection was made (or after the previous
  response on it ended); bytes that trickle in do not extend it;
* **body deadline**: its body must have arrived ``body_timeout`` s after its
  head;
* **per-client bounds**: a connection is *waiting* while it has no request the
  application works on (its head or body is on the way, or it idles between
  requests). At most ``per_client`` connections of one address wait; one more
  closes that address's oldest waiting connection, and at most ``max_waiting``
  wait overall, the oldest closed likewise. A real client's new connection is
  served at once while a stranger holds sockets (from any address, the same
  one included): it is the newest;
* **TCP_NODELAY** on every connection (a keep-alive request took 44 ms
  without it: Nagle's algorithm against the client's delayed ACK);
* a request that is not HTTP gets a JSON 400, as every other error;
* uvicorn's ``limit_concurrency`` is off; what the application does at once
  is bounded by the application (streams, thread pools).
"""
from __future__ import annotations

import asyncio
import json
import logging
import socket
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

if TYPE_CHECKING:
    import uvicorn

log = logging.getLogger("taskflow.netguard")

HEAD_TIMEOUT = 10.0      # s from a connection (or a response's end) to a request's full head
BODY_TIMEOUT = 30.0      # s from a request's head to its full body
PER_CLIENT = 32          # waiting connections of one address
MAX_WAITING = 256        # waiting connections overall
KEEP_ALIVE = 5.0         # s an idle connection stays open after a response


class Guard:
    """The waiting connections of one server, oldest first, overall and per address."""

    def __init__(self, head_timeout: float = HEAD_TIMEOUT, body_timeout: float = BODY_TIMEOUT,
                 per_client: int = PER_CLIENT, max_waiting: int = MAX_WAITING) -> None:
        self.head_timeout = head_timeout
        self.body_timeout = body_timeout
        self.per_client = per_client
        self.max_waiting = max_waiting
        self.waiting: OrderedDict[Any, None] = OrderedDict()
        self.by_client: dict[str, OrderedDict[Any, None]] = {}
        self.evicted = 0         # connections closed to make room (for tests and logs)
        self.expired = 0         # connections closed at a deadline

    def wait(self, conn: Any, client: str) -> None:
        """``conn`` waits (again): make room for it, evicting the oldest."""
        mine = self.by_client.setdefault(client, OrderedDict())
        if conn in mine:
            return
        mine[conn] = None
        self.waiting[conn] = None
        if len(mine) > self.per_client:
            self._evict(next(iter(mine)), f"more than {self.per_client} waiting from {client}")
        if len(self.waiting) > self.max_waiting:
            self._evict(next(iter(self.waiting)), f"more than {self.max_waiting} waiting")

    def busy(self, conn: Any, client: str) -> None:
        """``conn`` has a request in the application: not waiting any more."""
        self.waiting.pop(conn, None)
        mine = self.by_client.get(client)
        if mine is not None:
            mine.pop(conn, None)
            if not mine:
                del self.by_client[client]

    def _evict(self, conn: Any, why: str) -> None:
        self.evicted += 1
        log.info("closing a waiting connection from %s: %s", conn.peer, why)
        conn.drop()


class GuardedH11(H11Protocol):
    """uvicorn's h11 protocol with the deadlines and bounds of :class:`Guard`."""

    guard: Guard             # set on the subclass made for each server (:func:`protocol`)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._deadline: asyncio.TimerHandle | None = None
        self._phase = ""
        self.peer = self.client[0] if self.client else "?"
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        self._follow()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        self.guard.busy(self, self.peer)
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to bytes that are not an HTTP request, as JSON."""
        body = json.dumps({"error": f"{msg.rstrip('.')}: this server speaks HTTP/1.1"}).encode()
        event = h11.Response(status_code=400, reason=b"Bad Request",
                             headers=[(b"content-type", b"application/json"),
                                      (b"content-length", str(len(body)).encode()),
                                      (b"connection", b"close")])
        try:
            self.transport.write(self.conn.send(event) or b"")
            self.transport.write(self.conn.send(h11.Data(data=body)) or b"")
            self.transport.write(self.conn.send(h11.EndOfMessage()) or b"")
        except h11.LocalProtocolError:
            pass
        self.drop()

    def drop(self) -> None:
        """Close the connection (a deadline passed, or a newer one needs the room)."""
        self._cancel()
        self.guard.busy(self, self.peer)
        if not self.transport.is_closing():
            self.transport.close()

    # -- the phases ---------------------------------------------------------------------
    def _follow(self) -> None:
        """Where the connection is now: head, body (both waiting, with a deadline) or a
        request the application works on (busy, no deadline)."""
        if self.transport.is_closing():
            return
        cycle = self.cycle
        if cycle is None or cycle.response_complete:
            phase = "body" if self.conn.their_state is h11.SEND_BODY else "head"
        elif self.conn.their_state is h11.SEND_BODY:
            phase = "body"
        else:
            phase = "busy"
        if phase == self._phase:
            return
        self._phase = phase
        self._cancel()
        if phase == "busy":
            self.guard.busy(self, self.peer)
            return
        timeout = self.guard.head_timeout if phase == "head" else self.guard.body_timeout
        self._deadline = self.loop.call_later(timeout, self._expire)
        self.guard.wait(self, self.peer)

    def _expire(self) -> None:
        self._deadline = None
        self.guard.expired += 1
        log.info("closing a connection from %s: no full request %s within %g s", self.peer,
                 "head" if self._phase == "head" else "body",
                 self.guard.head_timeout if self._phase == "head" else self.guard.body_timeout)
        self.drop()

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None


def protocol(guard: Guard) -> type[GuardedH11]:
    """A protocol class for one server, sharing ``guard``."""
    return type("Guarded", (GuardedH11,), {"guard": guard})


def config(app: Any, guard: Guard, **kw: Any) -> uvicorn.Config:
    """A uvicorn configuration for ``app`` behind ``guard`` (``kw``: more options)."""
    import uvicorn
    return uvicorn.Config(app, http=protocol(guard), limit_concurrency=None,
                          timeout_keep_alive=int(KEEP_ALIVE), log_level="warning",
                          access_log=False, ws="none", lifespan="off", **kw)
