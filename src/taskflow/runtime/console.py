"""What ``taskflow run`` prints: a live progress line and the final summary."""
from __future__ import annotations

import sys
import threading
import time
from typing import Any


class Progress:
    """A one-line status on stderr, refreshed twice a second."""

    def __init__(self, rt: Any, interval: float = 0.5, stream: Any = None) -> None:
        self.rt = rt
        self.stream = stream or sys.stderr
        self.interval = interval
        self._stop = threading.Event()
        self._t0 = time.time()
        self._thread = threading.Thread(target=self._loop, name="taskflow-progress", daemon=True)
        self._thread.start()

    def line(self) -> str:
        c = self.rt.counts()
        nodes = sum(1 for n in self.rt.nodes if n.alive)
        return (f"taskflow: {c['done']} done, {c['running']} running, "
                f"{c['active'] - c['running']} waiting, {c['failed']} failed "
                f"| {nodes} node(s) | {time.time() - self._t0:.1f} s")

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._write("\r" + self.line() + "\x1b[K")

    def _write(self, s: str) -> None:
        try:
            self.stream.write(s)
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self._write("\r\x1b[K")


def summary(rt: Any, wall: float) -> str:
    c = rt.counts()
    slots = sum(n.slots for n in rt.nodes)
    lines = [f"taskflow: run {rt.run_id} {'FAILED' if rt.failed else 'finished'} in {wall:.2f} s: "
             f"{c['submitted']} tasks, {c['done']} done, {c['failed']} failed, "
             f"{c['cancelled']} cancelled, {c['retries']} retried; "
             f"{len(rt.nodes)} node(s), {slots} slot(s)"]
    for err in rt.failures[:10]:
        lines.append("  failed: " + str(err).split("\n", 1)[0])
    if len(rt.failures) > 10:
        lines.append(f"  ... and {len(rt.failures) - 10} more failures")
    return "\n".join(lines)
