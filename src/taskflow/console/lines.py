"""Progress off a terminal (CI, a batch job, ``| tee``): plain lines a log keeps.

One line every few seconds while the counts move, at once when the run's
state changes (a task failed, a node joined or left, the run is being
interrupted), a heartbeat when nothing moved for a minute, and the last
counts when the run ends::

    [00:00] run 20250101-120000-ab12cd: 2 node(s), 4 slot(s)
    [00:05] 40/120 done, 4 running, 12 queued, 64 waiting, 0 failed
    [00:07] 41/120 done, 4 running, 11 queued, 63 waiting, 1 failed; failed: boom (id 17)
    [00:12] 119/120 done, 0 running, 0 queued, 0 waiting, 1 failed

``done`` ended well; ``running`` started on a node; ``queued`` sent to a
node that has not started it (``console.occupancy``); ``waiting`` the rest
(inputs not ready, or no free slot yet); ``failed`` and, when there are
some, ``cancelled`` and ``interrupted``. No colour, no cursor movement, no carriage return: the
model is Snakemake's "x of y steps" and Nextflow's plain log. The counts are
the runtime's own counters, polled by one thread twice a second: nothing is
added to the run's hot path.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import IO, TYPE_CHECKING, Any

from .occupancy import occupancy

if TYPE_CHECKING:
    from .view import RunView

INTERVAL = 5.0      # s: the most often a line is printed while only the counts move
HEARTBEAT = 60.0    # s: a line even when nothing moved (the log shows the run is alive)
POLL = 0.5          # s: how often the counts are looked at
CHANGE_GAP = 1.0    # s: state changes coming faster than this share one line


def clock(seconds: float) -> str:
    """``[MM:SS]``, ``[H:MM:SS]`` past an hour."""
    s = max(int(seconds), 0)
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"[{h}:{m:02d}:{s:02d}]" if h else f"[{m:02d}:{s:02d}]"


class ProgressLines:
    """Prints the run's progress as plain lines on ``stream`` (default stderr)."""

    def __init__(self, rt: RunView, stream: IO[str] | None = None, interval: float = INTERVAL,
                 heartbeat: float = HEARTBEAT, poll: float = POLL) -> None:
        self.rt = rt
        self.stream = stream or sys.stderr
        self.interval = interval
        self.heartbeat = heartbeat
        self.poll = poll
        self._t0 = rt.t_start or time.time()
        self._counts: tuple[int, ...] = ()      # at the last line
        self._at_last: tuple[int, ...] = ()     # _moved() at the last line
        self._nodes = self._node_names()
        self._failures = len(rt.failures)
        self._interrupted = rt.interrupted
        self._last = 0.0                        # monotonic time of the last line
        self._stop = threading.Event()
        self._print(f"run {rt.run_id}: {self._nodes_text()}")
        self._thread = threading.Thread(target=self._loop, name="taskflow-progress",
                                        daemon=True)
        self._thread.start()

    # -- what is shown ---------------------------------------------------------------
    def _node_names(self) -> dict[str, int]:
        return {n.name: n.slots for n in list(self.rt.nodes) if n.usable}

    def _nodes_text(self) -> str:
        return f"{len(self._nodes)} node(s), {sum(self._nodes.values())} slot(s)"

    def counts(self) -> tuple[int, int, int, int, int, int, int, int]:
        """(submitted, done, running, queued, waiting, failed, cancelled, interrupted) now."""
        rt = self.rt
        occ = occupancy(rt)
        tally = rt.tally
        sub, done, failed, cancelled = tally.submitted, tally.done, tally.failed, tally.cancelled
        interrupted = tally.interrupted
        ended = done + failed + cancelled + interrupted
        running, queued = occ.n_running, occ.n_queued
        waiting = max(sub - ended - running - queued, 0)
        return sub, done, running, queued, waiting, failed, cancelled, interrupted

    def line(self, counts: tuple[int, ...], note: str = "") -> str:
        """The text of one progress line (without the clock)."""
        sub, done, running, queued, waiting, failed, cancelled, interrupted = counts
        text = (f"{done}/{sub} done, {running} running, {queued} queued, {waiting} waiting, "
                f"{failed} failed")
        if cancelled:
            text += f", {cancelled} cancelled"
        if interrupted:
            text += f", {interrupted} interrupted"
        return text + (f"; {note}" if note else "")

    def _changes(self, nodes_too: bool = True) -> str:
        """What changed in the run's state since the last look ("" for nothing)."""
        rt = self.rt
        notes = []
        failures = rt.failures
        if len(failures) > self._failures:
            new = failures[self._failures:]
            self._failures = len(failures)
            names = [f"{e.task_name or 'the run'} (id {e.task_id})" if e.task_id
                     else "the run" for e in new[:3]]
            more = f" and {len(new) - 3} more" if len(new) > 3 else ""
            notes.append(f"failed: {', '.join(names)}{more}")
        nodes = self._node_names() if nodes_too else self._nodes
        if nodes != self._nodes:
            came = [n for n in nodes if n not in self._nodes]
            went = [n for n in self._nodes if n not in nodes]
            self._nodes = nodes
            what = [f"+{n}" for n in came[:3]] + [f"-{n}" for n in went[:3]]
            notes.append(f"nodes {' '.join(what)}: {self._nodes_text()}")
        if rt.interrupted and rt.interrupted != self._interrupted:
            self._interrupted = rt.interrupted
            notes.append(f"interrupted ({rt.interrupted}): stopping")
        return "; ".join(notes)

    # -- when it is shown ------------------------------------------------------------
    def _moved(self) -> tuple[int, ...]:
        """The counters whose change is worth a line (cheap: no look at the nodes)."""
        tally = self.rt.tally
        return tally.submitted, tally.done, tally.failed, tally.cancelled, tally.interrupted

    def _loop(self) -> None:
        pending = ""        # state changes not printed yet (CHANGE_GAP)
        while not self._stop.wait(self.poll):
            try:
                note = self._changes()
            except Exception:  # noqa: BLE001 - a display never fails the run
                continue
            pending = "; ".join(p for p in (pending, note) if p)
            since = time.monotonic() - self._last
            if (pending and since >= CHANGE_GAP) \
                    or (self._moved() != self._at_last and since >= self.interval) \
                    or since >= self.heartbeat:
                try:
                    self._show(self.counts(), pending)
                except Exception:  # noqa: BLE001 - a display never fails the run
                    continue
                pending = ""

    def _show(self, counts: tuple[int, ...], note: str = "") -> None:
        self._counts = counts
        self._at_last = self._moved()
        self._print(self.line(counts, note))

    def _print(self, text: str) -> None:
        self._last = time.monotonic()
        try:
            self.stream.write(f"{clock(time.time() - self._t0)} {text}\n")
            self.stream.flush()
        except (OSError, ValueError):       # a closed pipe: the run goes on without
            pass

    def close(self) -> None:
        """The last line: the counts when the run ended (unless the last line has them)."""
        self._stop.set()
        self._thread.join(5)
        try:
            note = self._changes(nodes_too=False)    # (the nodes have just been stopped)
            counts = self.counts()
            if note or counts != self._counts:          # else the last line says it all
                self._show(counts, note)
        except Exception:  # noqa: BLE001 - a display never fails the run
            pass


def start(rt: RunView, terminal: bool, stream: Any = None) -> Any:
    """The run's progress display: rich bars on a terminal, plain lines elsewhere, and on
    a terminal that says no size (a pty made by ``script`` or a CI runner: 0 x 0), where
    redrawn bars of a guessed width would wrap and scroll when the record is replayed."""
    if terminal and _sized(stream if stream is not None else sys.stderr):
        from .bars import Progress
        return Progress(rt, stream=stream)
    return ProgressLines(rt, stream=stream)


def _sized(stream: Any) -> bool:
    """The terminal behind ``stream`` reports a size (rows and columns are not 0)."""
    try:
        size = os.get_terminal_size(stream.fileno())
    except (AttributeError, OSError, ValueError):
        return False
    return size.columns > 0 and size.lines > 0
