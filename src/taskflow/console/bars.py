"""What ``taskflow run`` prints: live progress bars and the final summary line."""
from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

from .occupancy import occupancy

if TYPE_CHECKING:
    from ..events import Event
    from .view import RunView


MAX_NAMES = 24     # one bar per task name up to this many (NMMB has 23); the rest share one


def _state_bar(bar_width: int) -> Any:
    """A bar column that is green, and red once a task of its bar failed (rich's default
    pink-red for a bar in progress read as failures)."""
    from rich.progress import BarColumn

    class StateBar(BarColumn):
        def render(self, task: Any) -> Any:
            self.complete_style = self.finished_style = \
                "red" if task.fields.get("n_failed") else "green"
            return super().render(task)

    return StateBar(bar_width=bar_width)


class _Counts:
    """Per task name: submitted, done, failed, cancelled (from the event bus)."""

    __slots__ = ("submitted", "done", "failed", "cancelled", "bar")

    def __init__(self) -> None:
        self.submitted = self.done = self.failed = self.cancelled = 0
        self.bar: Any = None       # the rich task id of its bar


class Progress:
    """Live progress of ``taskflow run`` on a terminal (rich): a bar per task name.

    Each bar shows ended of submitted, the tasks running and those queued on
    a node, the failed ones (in red: the only red), the percentage, the time
    since the first task of that name and an estimate of the time left
    (rich's, from the recent rate of completion); an ``all tasks`` bar sums
    them. A bar is green, red once a task of it failed. Up to
    :data:`MAX_NAMES` names get a bar each (in the order they first appear);
    the others share an ``other`` bar. Counts come from the event bus;
    running and queued tasks are read from the nodes at each refresh
    (:mod:`.occupancy`). Off a terminal ``taskflow run`` prints plain lines
    instead (:mod:`.lines`); given a stream that is not a terminal,
    this prints the bars once, complete, when closed.
    """

    def __init__(self, rt: RunView, interval: float = 0.5, stream: Any = None) -> None:
        from rich.console import Console
        from rich.progress import (TaskProgressColumn, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)
        from rich.progress import Progress as RichProgress
        self.rt = rt
        self._lock = threading.Lock()
        self.per_name: dict[str, _Counts] = {}
        self._syncing = False
        self.console = Console(file=stream or sys.stderr)
        owner = self

        class _Bars(RichProgress):
            def get_renderables(self) -> Any:
                # (rich renders once in __init__, and add_task refreshes: no re-entry)
                if getattr(owner, "bars", None) is not None:
                    owner._sync_once()
                yield owner._header()
                yield from super().get_renderables()

        self.bars = _Bars(
            TextColumn("{task.description}", justify="left"),
            _state_bar(bar_width=28),
            TextColumn("{task.completed:>6.0f}/{task.total:<6.0f}"),
            TextColumn("{task.fields[running]:>4} running"),
            TextColumn("{task.fields[queued]:>4} queued"),
            TextColumn("{task.fields[failed]}"),
            TaskProgressColumn(),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            console=self.console, refresh_per_second=1 / interval, transient=False)
        self._all = self.bars.add_task("[bold]all tasks", total=0, running=0, queued=0,
                                       failed="", n_failed=0)
        self._other: Any = None
        self._other_names = 0
        rt.bus.subscribe(self._on_events)
        # On a terminal the bars redraw in place; elsewhere (a pipe, a CI log) they are
        # printed once, complete, at the end, not once per refresh.
        self.live = self.console.is_terminal
        if self.live:
            self.bars.start()

    _KINDS = ("submitted", "done", "failed", "cancelled")

    def _on_events(self, evs: list[Event]) -> None:
        kinds = self._KINDS
        with self._lock:
            per = self.per_name
            for ev in evs:
                kind, name = ev[0], ev[3]
                if kind not in kinds or not name:
                    continue
                c = per.get(name)
                if c is None:
                    c = per[name] = _Counts()
                setattr(c, kind, getattr(c, kind) + 1)

    def _running(self) -> dict[str, int]:
        """Tasks running now, per name (:func:`.occupancy.occupancy`)."""
        return occupancy(self.rt).running

    def _sync_once(self) -> None:
        """:meth:`_sync`, unless it is running already (rich may render from inside it)."""
        if self._syncing:
            return
        self._syncing = True
        try:
            self._sync()
        finally:
            self._syncing = False

    def _sync(self) -> None:
        """Bring the bars up to date (called by rich before each refresh)."""
        occ = occupancy(self.rt)
        running, queued = occ.running, occ.queued
        with self._lock:
            rows = list(self.per_name.items())
        tot = [0, 0, 0, 0, 0]
        other = [0, 0, 0, 0, 0]
        bars = self.bars
        for i, (name, c) in enumerate(rows):
            vals = [c.submitted, c.done + c.failed + c.cancelled, running.get(name, 0),
                    queued.get(name, 0), c.failed]
            tot = [a + b for a, b in zip(tot, vals)]
            if i >= MAX_NAMES:
                other = [a + b for a, b in zip(other, vals)]
                continue
            if c.bar is None:
                c.bar = bars.add_task(name, total=0, running=0, queued=0, failed="",
                                      n_failed=0)
            self._update(c.bar, *vals)
        if len(rows) > MAX_NAMES:
            if self._other is None:
                self._other = bars.add_task("other", total=0, running=0, queued=0,
                                            failed="", n_failed=0)
            if self._other_names != len(rows) - MAX_NAMES:
                self._other_names = len(rows) - MAX_NAMES
                bars.update(self._other, description=f"{self._other_names} other names")
            self._update(self._other, *other)
        self._update(self._all, *tot)

    def _update(self, bar: Any, submitted: int, ended: int, running: int, queued: int,
                failed: int) -> None:
        self.bars.update(bar, total=max(submitted, 1) if submitted else 0, completed=ended,
                         running=running, queued=queued, n_failed=failed,
                         failed=f"[red]{failed} failed" if failed else "")

    def _header(self) -> Any:
        from rich.text import Text
        nodes = [n for n in self.rt.nodes if n.usable]
        return Text(f"taskflow run {self.rt.run_id}: {len(nodes)} node(s), "
                    f"{sum(n.slots for n in nodes)} slot(s)", style="bold")

    def counts(self) -> dict[str, tuple[int, int, int, int]]:
        """{name: (submitted, done, failed, cancelled)} as the bars know them."""
        with self._lock:
            return {n: (c.submitted, c.done, c.failed, c.cancelled)
                    for n, c in self.per_name.items()}

    def close(self) -> None:
        self.rt.bus.flush()
        if self.live:
            self.bars.stop()        # draws the bars a last time, complete
        else:
            from rich.console import Group
            self.console.print(Group(*self.bars.get_renderables()))
        self.rt.bus.unsubscribe(self._on_events)
        self.console.file.flush()


def summary(rt: RunView, wall: float) -> str:
    """The run's last line (and the nodes that came back, if any)."""
    c = rt.tally
    nodes = {n.name: n for n in rt.nodes}      # (a node back after a loss: counted once)
    slots = sum(n.slots for n in nodes.values())
    failed = rt.failed
    handled = " (handled by the script)" if not failed and rt.handled_note() else ""
    lines = [f"taskflow: run {rt.run_id} {'FAILED' if failed else 'finished'} in {wall:.2f} s: "
             f"{c.submitted} tasks, {c.done} done, {c.failed} failed{handled}, "
             f"{c.cancelled} cancelled, {c.retries} retried; "
             f"{len(nodes)} node(s), {slots} slot(s)"]
    back = rt.node_returns()
    if back:                                    # lost nodes that came back
        lines.append(f"taskflow: {back}")
    return "\n".join(lines)
