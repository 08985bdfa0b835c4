"""Large values fetched to the master, written to the resume log by a thread of their own.

A value fetched to the master (a ``wait_on`` of a value left on its node) is kept in
the resume log before anyone reads it (:mod:`..recovery.log`: a ``"g"`` record), so a
resume restores it. Its CRC-32 and its ``write`` take about 0.8 ms a MB; on the loop
thread they held up every other node's results meanwhile (200 values of 1 MB ran at
0.5-0.6 of a run without the log). A value of :data:`APART` bytes or more goes to
:class:`KeepLater`'s thread instead; its fetch stays pending, its future without its
value and its waiters waiting, until that thread has written it and settles it, under
the run's lock (:meth:`.fetches.Fetches.written`): nobody reads it before it is in the
log, as before, and the loop goes on with the other nodes while it is written.
"""
from __future__ import annotations

import threading
import traceback
from collections import deque
from typing import TYPE_CHECKING, Any, Callable, Optional

from ...errors import RecordFailed
from ..recovery.log import APART

if TYPE_CHECKING:
    from ..recovery.log import ResumeLog

__all__ = ["APART", "KeepLater"]


class KeepLater:
    """One thread that writes fetched values to the resume log, in the order given, and
    calls ``written(data id, why the write failed or None)`` after each."""

    def __init__(self, log: ResumeLog, written: Callable[[int, Optional[str]], None]) -> None:
        self.log = log
        self.written = written
        self._todo: deque[tuple[int, Any]] = deque()
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None
        self._closed = False

    def keep(self, did: int, payload: Any) -> None:
        """Write ``payload`` (data id ``did``), then call ``written``."""
        with self._cond:
            self._todo.append((did, payload))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True,
                                                name="taskflow-keep-fetched")
                self._thread.start()
            self._cond.notify_all()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._todo and not self._closed:
                    self._cond.wait()
                if not self._todo:
                    return
                did, payload = self._todo.popleft()
            why: str | None = None
            try:
                self.log.fetched(did, payload)
            except RecordFailed as exc:
                why = str(exc)
            except Exception as exc:  # noqa: BLE001 - said as a failed write: the run fails
                why = f"resume log {self.log.path}: the value d{did} could not be kept ({exc})"
            try:
                self.written(did, why)
            except Exception:  # noqa: BLE001 - a defect: said, and the thread goes on
                traceback.print_exc()

    def close(self) -> None:
        """Write what was given, then end the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        thread = self._thread
        if thread is not None:
            thread.join(120.0)
