"""uvicorn's h11 protocol with the deadlines and bounds of a :class:`~.guard.Guard`.

Per connection, whatever its state:

* **head deadline**: a request's line and headers must have arrived
  ``head_timeout`` s after the connection was made (or after the previous response
  on it ended); bytes that trickle in do not extend it;
* **body deadline**: its body must have arrived ``body_timeout`` s after its head;
* **send deadline**: while a request is in the application, its response may wait
  ``send_timeout`` s at most for the client to read it (a client that sends and never
  reads is closed; asyncio's write buffer would otherwise hold the responses);
* **one request at a time**: while a request is in the application, bytes that came
  after it (pipelined requests) are not read any further: reading stops until its
  response has gone (uvicorn reads on, and h11 kept every byte: 100 connections that
  sent GETs and never read grew a server by 870 MB);
* counted and made room for by the guard (:mod:`.guard`), TCP_NODELAY (a keep-alive
  request took 44 ms without it), and a request that is not HTTP gets a JSON 400.
"""
from __future__ import annotations

import asyncio
import json
import socket
from typing import TYPE_CHECKING, Any

import h11
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.h11_impl import H11Protocol

from .guard import GONE, SENT, SILENT, Guard
from .limits import ACCEPT_BATCH, KEEP_ALIVE, LISTEN_QUEUE

if TYPE_CHECKING:
    import uvicorn


class _HeldFlow(FlowControl):
    """uvicorn's flow control, whose reading stays paused while its connection holds
    pipelined bytes behind a request in the application (uvicorn resumes reading
    whenever the application waits for a message, to see the client leave)."""

    def __init__(self, transport: asyncio.Transport, owner: GuardedH11) -> None:
        super().__init__(transport)
        self.owner = owner

    def resume_reading(self) -> None:
        if not self.owner.holding():
            super().resume_reading()


class GuardedH11(H11Protocol):
    """uvicorn's h11 protocol with the deadlines and bounds of :class:`Guard`."""

    guard: Guard             # set on the subclass made for each server (:func:`protocol`)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.flow = _HeldFlow(transport, self)
        self._deadline: asyncio.TimerHandle | None = None
        self._stall: asyncio.TimerHandle | None = None
        self._phase = ""
        self._heard = False     # bytes came since the last response
        self.peer = self.client[0] if self.client else "?"
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass
        self.guard.opened(self, self.peer)
        self._follow()

    def data_received(self, data: bytes) -> None:
        self._heard = True
        super().data_received(data)
        self._hold()
        self._follow()

    def on_response_complete(self) -> None:
        self._heard = self._unparsed() > 0
        super().on_response_complete()      # (the next pipelined request, if any, starts)
        self._hold()
        self._follow()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel()
        self._unstall()
        self.guard.closed(self, self.peer)
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        """The client reads less than the response gives: it has ``send_timeout`` s."""
        super().pause_writing()
        if self._stall is None and not self.transport.is_closing():
            self._stall = self.loop.call_later(self.guard.send_timeout, self._stalled)

    def resume_writing(self) -> None:
        super().resume_writing()
        self._unstall()

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
        """Close the connection (a deadline passed, or a newer one needs the room); what
        it has not sent yet is dropped too when the client does not read."""
        self._cancel()
        self._unstall()
        self.guard.closed(self, self.peer)
        if self.flow.write_paused:
            self.transport.abort()
        elif not self.transport.is_closing():
            self.transport.close()

    def rank(self) -> int:
        """For the guard's choice of whom to close: GONE (its client closed or reset it,
        and that is not read yet), SENT (bytes came since its last response, or wait in
        the kernel) or SILENT."""
        if self.transport.is_closing():
            return GONE
        tsock = self.transport.get_extra_info("socket")
        if tsock is None:
            return SENT
        peek = socket.socket(fileno=tsock.fileno())
        try:
            got = peek.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return SENT if self._heard else SILENT
        except OSError:
            return GONE
        finally:
            peek.detach()           # (the descriptor stays the transport's)
        return SENT if got else GONE

    # -- one request at a time ------------------------------------------------------------
    def holding(self) -> bool:
        """A request is in the application, its body read, and bytes after it wait."""
        cycle = self.cycle
        return (cycle is not None and not cycle.response_complete
                and self.conn.their_state is not h11.SEND_BODY and self._unparsed() > 0)

    def _unparsed(self) -> int:
        buffer = getattr(self.conn, "_receive_buffer", None)   # (h11's, not copied)
        return len(buffer) if buffer is not None else len(self.conn.trailing_data[0])

    def _hold(self) -> None:
        if self.holding():
            self.flow.pause_reading()
            if self.transport.is_reading():     # (uvicorn resumes the transport itself too)
                self.transport.pause_reading()

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
        limit = self.guard.head_timeout if self._phase == "head" else self.guard.body_timeout
        self.guard.expire(self, f"no full request {self._phase} within {limit:g} s")
        self.drop()

    def _stalled(self) -> None:
        self._stall = None
        self.guard.expire(self, f"it read no response for {self.guard.send_timeout:g} s")
        self.drop()

    def _cancel(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _unstall(self) -> None:
        if self._stall is not None:
            self._stall.cancel()
            self._stall = None


def protocol(guard: Guard) -> type[GuardedH11]:
    """A protocol class for one server, sharing ``guard``."""
    return type("Guarded", (GuardedH11,), {"guard": guard})


def server_class() -> type[uvicorn.Server]:
    """uvicorn's server, whose event loop accepts at most ``ACCEPT_BATCH`` connections at
    a time (asyncio takes the ``backlog`` given to ``create_server`` as that batch, and
    as the listen queue): a connect flood accepted 2,048 at a time kept the loop from
    the token holder's request for milliseconds. The listen queue is set back to
    ``LISTEN_QUEUE`` once it serves."""
    import uvicorn

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            for sock in sockets or ():
                try:
                    sock.listen(LISTEN_QUEUE)
                except OSError:
                    pass

    return Server


def config(app: Any, guard: Guard, **kw: Any) -> uvicorn.Config:
    """A uvicorn configuration for ``app`` behind ``guard`` (``kw``: more options).
    uvicorn's ``limit_concurrency`` is off (it counted idle connections: 150 silent
    sockets made every request answer 503); the guard counts connections, and what the
    application does at once is bounded by the application (streams, thread pools)."""
    import uvicorn
    return uvicorn.Config(app, http=protocol(guard), limit_concurrency=None,
                          timeout_keep_alive=int(KEEP_ALIVE), log_level="warning",
                          access_log=False, ws="none", lifespan="off",
                          backlog=ACCEPT_BATCH, **kw)
