"""Refused strangers said once per address per minute, not once per connection.

A flood of refused connections (3,467 in 30 s from one stranger at the dial-back
port) made as many log lines. :class:`Summary` says an address's first refusal at
once; the ones after it within ``every`` s are counted and said with that address's
next line (its next refusal after the period, or :meth:`Summary.flush` when the
server closes). Thread-safe; it remembers at most ``keep`` addresses (the quietest
are said and forgotten first).
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from .limits import SUMMARY_EVERY


class _Seen:
    __slots__ = ("said", "more", "why")

    def __init__(self, said: float) -> None:
        self.said = said        # clock time of the address's last line
        self.more = 0           # refusals since that line, not said yet
        self.why = ""           # the last of them


class Summary:
    """Log lines about refused connections, at most one per address per ``every`` s."""

    def __init__(self, logger: logging.Logger, level: int = logging.WARNING,
                 every: float = SUMMARY_EVERY, clock: Callable[[], float] = time.monotonic,
                 keep: int = 1024) -> None:
        self.log = logger
        self.level = level
        self.every = every
        self.clock = clock
        self.keep = keep
        self.lines = 0                  # lines logged (for tests and reports)
        self._seen: dict[str, _Seen] = {}
        self._lock = threading.Lock()

    def add(self, address: str, message: str) -> bool:
        """One refusal from ``address``, said as ``message``; True when it made a line."""
        now = self.clock()
        with self._lock:
            seen = self._seen.get(address)
            if seen is not None and now - seen.said < self.every:
                seen.more += 1
                seen.why = message
                return False
            more = seen.more if seen is not None else 0
            self._seen.pop(address, None)
            self._seen[address] = _Seen(now)      # (newest last: the dict is in line order)
            forget = self._forget(now)
        self._say(message, address, more)
        for addr, old in forget:
            self._say(old.why, addr, old.more - 1, last=True)
        return True

    def flush(self) -> None:
        """Say the refusals counted and not said yet (the server closes)."""
        with self._lock:
            pending = [(a, s) for a, s in self._seen.items() if s.more]
            self._seen.clear()
        for addr, seen in pending:
            self._say(seen.why, addr, seen.more - 1, last=True)

    def _forget(self, now: float) -> list[tuple[str, _Seen]]:
        """Addresses past ``keep``: the quietest, whose counted refusals are said now."""
        out = []
        while len(self._seen) > self.keep:
            addr = next(iter(self._seen))
            seen = self._seen.pop(addr)
            if seen.more:
                out.append((addr, seen))
        return out

    def _say(self, message: str, address: str, more: int, last: bool = False) -> None:
        self.lines += 1
        if last:
            tail = f" ({more} more from {address} before it, not said one by one)" \
                if more > 0 else ""
        else:
            tail = f" ({more} more from {address} since its last line, not said one by one)" \
                if more else ""
        self.log.log(self.level, "%s%s", message, tail)
