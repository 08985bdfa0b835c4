"""What ``taskflow run`` prints: a live progress line and the final summary."""
from __future__ import annotations

import sys
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .events import Event
    from .runtime import Runtime


class Progress:
    """Live progress of ``taskflow run`` on stderr (rich): tasks per name, nodes, time.

    Counts come from the event bus (submitted / done / failed / cancelled per
    task name); running tasks are read from the nodes' in-flight tables at
    each refresh, so short tasks that get no ``dispatched`` event still show.
    """

    def __init__(self, rt: Runtime, interval: float = 0.5, stream: Any = None) -> None:
        from rich.console import Console
        from rich.live import Live
        self.rt = rt
        self._t0 = time.time()
        self._lock = threading.Lock()
        self.per_name: dict[str, list[int]] = {}      # name -> [submitted, done, failed, cancelled]
        rt.bus.subscribe(self._on_events)
        self.console = Console(file=stream or sys.stderr)
        self.live = Live(self._render(), console=self.console, refresh_per_second=1 / interval,
                         transient=False, get_renderable=self._render)
        self.live.start()

    _INDEX = {"submitted": 0, "done": 1, "failed": 2, "cancelled": 3}

    def _on_events(self, evs: list[Event]) -> None:
        index = self._INDEX
        with self._lock:
            per = self.per_name
            for ev in evs:
                i = index.get(ev[0])
                if i is None or not ev[3]:
                    continue
                c = per.get(ev[3])
                if c is None:
                    c = per[ev[3]] = [0, 0, 0, 0]
                c[i] += 1

    def _running(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for n in list(self.rt.nodes):
            for t in list(n.inflight.values()):
                out[t.spec.name] = out.get(t.spec.name, 0) + 1
        return out

    def _render(self) -> Any:
        from rich.table import Table
        running = self._running()
        nodes = [n for n in self.rt.nodes if n.usable]
        table = Table(title=f"taskflow run {self.rt.run_id} | {time.time() - self._t0:.1f} s | "
                            f"{len(nodes)} node(s), {sum(n.slots for n in nodes)} slot(s)",
                      title_justify="left", expand=False)
        for col in ("task", "done", "running", "waiting", "failed", "cancelled"):
            table.add_column(col, justify="left" if col == "task" else "right")
        with self._lock:
            rows = sorted(self.per_name.items())
        tot = [0, 0, 0, 0, 0]
        for name, (sub, done, failed, cancelled) in rows:
            run = running.get(name, 0)
            wait = max(0, sub - done - failed - cancelled - run)
            vals = [done, run, wait, failed, cancelled]
            tot = [a + b for a, b in zip(tot, vals)]
            table.add_row(name, *[str(v) for v in vals])
        if len(rows) > 1:
            table.add_row("all", *[str(v) for v in tot], style="bold")
        return table

    def line(self) -> str:
        c = self.rt.counts()
        return f"{c['done']} done, {c['running']} running, {c['failed']} failed"

    def close(self) -> None:
        self.rt.bus.flush()
        self.live.stop()
        self.rt.bus.unsubscribe(self._on_events)


def summary(rt: Runtime, wall: float) -> str:
    c = rt.counts()
    slots = sum(n.slots for n in rt.nodes)
    lines = [f"taskflow: run {rt.run_id} {'FAILED' if rt.failed else 'finished'} in {wall:.2f} s: "
             f"{c['submitted']} tasks, {c['done']} done, {c['failed']} failed, "
             f"{c['cancelled']} cancelled, {c['retries']} retried; "
             f"{len(rt.nodes)} node(s), {slots} slot(s)"]
    return "\n".join(lines)
