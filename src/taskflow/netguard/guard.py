"""The connections of one server, counted per address whatever their state.

Every connection is *open* from its accept to its close; it is *waiting* while it
has no request the application works on (its head or body is on the way, or it
idles between requests). Four bounds, and whom one more closes:

* more than ``per_client_open`` open connections of one address: that address's
  oldest waiting one, else its oldest;
* more than ``max_open`` open in all: the oldest waiting (else oldest) connection of
  the address that holds the most;
* more than ``per_client`` waiting connections of one address: its oldest waiting;
* more than ``max_waiting`` waiting in all: the oldest waiting connection of the
  address with the most waiting.

Of the waiting connections, those whose client closed them already go first, then
those that sent nothing, then the others, oldest first (:meth:`Guard._pick`).

So a flood from one address closes that address's own connections first: a client
with the token, from another address, keeps its connections, and from the same
address its newest one is served (it is never the oldest).
"""
from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any

from .limits import (BODY_TIMEOUT, HEAD_TIMEOUT, MAX_OPEN, MAX_WAITING, PER_CLIENT,
                     PER_CLIENT_OPEN, SEND_TIMEOUT)
from .summary import Summary

log = logging.getLogger("taskflow.netguard")

Books = dict[str, "OrderedDict[Any, None]"]      # address -> its connections, oldest first
GONE, SILENT, SENT = 0, 1, 2    # a connection's rank(): its client closed it, sent nothing, sent
SCAN = 64                       # waiting connections looked at to choose one to close


class Guard:
    """The open and the waiting connections of one server, oldest first, per address."""

    def __init__(self, head_timeout: float = HEAD_TIMEOUT, body_timeout: float = BODY_TIMEOUT,
                 per_client: int = PER_CLIENT, max_waiting: int = MAX_WAITING,
                 send_timeout: float = SEND_TIMEOUT, per_client_open: int = PER_CLIENT_OPEN,
                 max_open: int = MAX_OPEN) -> None:
        self.head_timeout = head_timeout
        self.body_timeout = body_timeout
        self.send_timeout = send_timeout
        self.per_client = per_client
        self.max_waiting = max_waiting
        self.per_client_open = per_client_open
        self.max_open = max_open
        self.waiting: OrderedDict[Any, None] = OrderedDict()
        self.by_client: Books = {}              # waiting connections per address
        self.open: OrderedDict[Any, str] = OrderedDict()     # connection -> address
        self.open_by: Books = {}                # open connections per address
        self.evicted = 0         # connections closed to make room (for tests and logs)
        self.expired = 0         # connections closed at a deadline
        self.said = Summary(log, logging.INFO)  # one line per address per minute

    # -- what the protocol tells ---------------------------------------------------------
    def opened(self, conn: Any, client: str) -> None:
        """A new connection from ``client``: make room for it."""
        self.open[conn] = client
        mine = self.open_by.setdefault(client, OrderedDict())
        mine[conn] = None
        if len(mine) > self.per_client_open:
            self._evict(self._victim(client, conn),
                        f"more than {self.per_client_open} connections from {client}")
        if len(self.open) > self.max_open:
            heaviest = max(self.open_by, key=lambda c: len(self.open_by[c]))
            self._evict(self._victim(heaviest, conn),
                        f"more than {self.max_open} connections, {heaviest} holds the most")

    def wait(self, conn: Any, client: str) -> None:
        """``conn`` waits (again): make room for it, evicting the oldest."""
        if conn not in self.open:
            return                              # (closed already)
        mine = self.by_client.setdefault(client, OrderedDict())
        if conn in mine:
            return
        mine[conn] = None
        self.waiting[conn] = None
        if len(mine) > self.per_client:
            self._evict(self._pick(mine, conn),
                        f"more than {self.per_client} waiting from {client}")
        if len(self.waiting) > self.max_waiting:
            heaviest = max(self.by_client, key=lambda c: len(self.by_client[c]))
            self._evict(self._pick(self.by_client[heaviest], conn),
                        f"more than {self.max_waiting} waiting, {heaviest} has the most")

    def busy(self, conn: Any, client: str) -> None:
        """``conn`` has a request in the application: not waiting any more."""
        self.waiting.pop(conn, None)
        _leave(self.by_client, client, conn)

    def closed(self, conn: Any, client: str) -> None:
        """``conn`` is closed: it counts no more."""
        self.busy(conn, client)
        if self.open.pop(conn, None) is not None:
            _leave(self.open_by, client, conn)

    # -- making room ----------------------------------------------------------------------
    def _victim(self, client: str, new: Any) -> Any:
        """The connection of ``client`` to close: of its waiting ones, the oldest its
        client closed already, else the oldest silent one, else its oldest waiting; else
        its oldest (never ``new``, the one being made room for, unless it is the only
        one)."""
        waiting = self._pick(self.by_client.get(client, ()), new)
        if waiting is not None:
            return waiting
        for conn in self.open_by.get(client, ()):
            if conn is not new:
                return conn
        return new

    @staticmethod
    def _pick(conns: Any, new: Any = None) -> Any:
        """Of ``conns`` (oldest first), the one to close first: the oldest whose client has
        closed it already (a connect/close flood leaves many such, accepted in bursts
        before their end is read), else the oldest that sent nothing, else the oldest.
        Age alone would close a client's new connection that arrived in the same burst
        as 32 of a stranger's. At most ``SCAN`` are looked at."""
        silent = oldest = None
        for i, conn in enumerate(conns):
            if conn is new:
                continue
            if i >= SCAN:
                break
            rank = conn.rank()
            if rank == GONE:
                return conn
            if rank == SILENT and silent is None:
                silent = conn
            if oldest is None:
                oldest = conn
        return silent if silent is not None else oldest

    def _evict(self, conn: Any, why: str) -> None:
        self.evicted += 1
        self.said.add(conn.peer, f"closing connections from {conn.peer}: {why}")
        self.closed(conn, conn.peer)
        conn.drop()

    def expire(self, conn: Any, why: str) -> None:
        """``conn`` passed one of its deadlines (the protocol closes it)."""
        self.expired += 1
        self.said.add(conn.peer, f"closing a connection from {conn.peer}: {why}")


def _leave(books: Books, client: str, conn: Any) -> None:
    mine = books.get(client)
    if mine is not None:
        mine.pop(conn, None)
        if not mine:
            del books[client]
