"""The live progress of a notebook's tasks, in the output of the cell that called them.

Each cell that calls tasks gets one display: a bar per task name with its
done, running and failed counts (:func:`.html.progress_html`). Tasks belong to
the cell that was running when they were submitted (the k-th task submitted
is the cell's whose count of tasks before it is under k; a task called from
no cell, a thread's or a nested one, is the latest cell's). Counts come from
the run's event bus; running tasks are read from the nodes
(:func:`taskflow.console.occupancy.occupancy`), as ``taskflow run``'s bars do.

One thread per run redraws the displays every :data:`INTERVAL` seconds while
some cell's tasks have not all ended, and waits otherwise: the kernel is never
blocked by it. The display is made in the cell's own output: the thread makes
it in a copy of the cell's context (ipykernel >= 7 keeps the cell's message in
a context variable), or the cell's end does (``post_run_cell``). An update is a
``display_id`` update (or a widget's value, with ipywidgets), which every
front end applies wherever the display is. A cell's display stops updating
once its tasks have all ended, after a last update with the final counts (the
cell's end and ``taskflow.stop()`` make that update themselves, in the cell).
"""
from __future__ import annotations

import contextvars
import threading
from typing import TYPE_CHECKING, Any

from ..console.occupancy import occupancy
from .html import ipython, progress_html, show_html, update_html

if TYPE_CHECKING:
    from ..console.view import RunView
    from ..events import Event

INTERVAL = 0.5          # s between redraws while tasks run
_ENDS = {"done": 1, "failed": 2, "cancelled": 3, "interrupted": 3}


class _Cell:
    """One cell's tasks: per name [submitted, done, failed, cancelled], and its display."""

    __slots__ = ("ctx", "before", "counts", "display", "shown", "open")

    def __init__(self, ctx: contextvars.Context, before: int) -> None:
        self.ctx = ctx
        self.before = before            # tasks submitted before the cell started
        self.counts: dict[str, list[int]] = {}
        self.display: Any = None        # its display handle (or widget)
        self.shown = ""                 # the HTML it shows
        self.open = True                # the cell runs (it may call more tasks)

    def live(self) -> bool:
        return self.open or any(c[0] > c[1] + c[2] + c[3] for c in self.counts.values())


class LiveProgress:
    """The displays of a run's cells (see the module); ``widgets``: ipywidgets' HTML."""

    def __init__(self, rt: RunView, widgets: bool = False) -> None:
        self.rt = rt
        self.widgets = widgets
        self._lock = threading.Lock()           # the cells and their counts
        self._drawing = threading.Lock()        # one thread draws at a time
        self._cells: list[_Cell] = []           # cells whose display still updates
        self._owner: dict[int, _Cell] = {}      # task id -> its cell, until it ends
        self._submitted = 0                     # submitted events seen
        self._wake = threading.Event()         # a task was submitted
        self._halt = threading.Event()         # the run ended: the thread ends
        rt.bus.subscribe(self._on_events)
        self._thread = threading.Thread(target=self._loop, daemon=True,
                                        name="taskflow-notebook-progress")
        self._thread.start()

    # -- the kernel's main thread ------------------------------------------------------
    def cell_started(self) -> None:
        """A cell starts (``pre_run_cell``): the tasks it calls are its own."""
        cell = _Cell(contextvars.copy_context(), self.rt.tally.submitted)
        with self._lock:
            self._cells = [c for c in self._cells if c.counts]   # (those that called none)
            for c in self._cells:
                c.open = False
            self._cells.append(cell)

    def cell_ended(self) -> None:
        """The cell ends (``post_run_cell``): its display made if it called tasks, and
        every display brought up to date (final where the tasks have ended)."""
        self.rt.bus.flush()
        with self._lock:
            for c in self._cells:
                c.open = False
        self._draw(here=True)

    def close(self) -> None:
        """The run ended: every display shows its final counts; the thread ends."""
        self.rt.bus.flush()
        with self._lock:
            for c in self._cells:
                c.open = False
        self._draw(here=True)
        self._halt.set()
        self._wake.set()
        self._thread.join(5)
        self.rt.bus.unsubscribe(self._on_events)

    # -- the bus thread ------------------------------------------------------------------
    def _on_events(self, evs: list[Event]) -> None:
        with self._lock:
            cells = self._cells
            for ev in evs:
                kind, tid, name = ev[0], ev[2], ev[3]
                if kind == "submitted":
                    self._submitted += 1
                    cell = next((c for c in reversed(cells) if c.before < self._submitted),
                                cells[-1] if cells else None)
                    if cell is None or not name:
                        continue
                    self._owner[tid] = cell
                    row = cell.counts.get(name)
                    if row is None:
                        row = cell.counts[name] = [0, 0, 0, 0]
                    row[0] += 1
                    self._wake.set()
                    continue
                col = _ENDS.get(kind)
                if col is None:
                    continue
                cell = self._owner.pop(tid, None)
                if cell is not None and name in cell.counts:
                    cell.counts[name][col] += 1

    # -- drawing -----------------------------------------------------------------------
    def _loop(self) -> None:
        while True:
            with self._lock:
                busy = any(c.counts for c in self._cells)
            if busy:
                if self._halt.wait(INTERVAL):       # a redraw every INTERVAL while busy
                    return
            else:                                   # nothing to follow: until a task comes
                self._wake.wait()
                self._wake.clear()
                if self._halt.is_set():
                    return
                continue
            try:
                self._draw(here=False)
            except Exception:  # noqa: BLE001 - a display's trouble never stops the run
                pass

    def _draw(self, here: bool) -> None:
        """Redraw every cell's display that changed; ``here``: in the cell's own thread
        (its end), else in the progress thread."""
        running = occupancy(self.rt).running
        with self._drawing:
            with self._lock:
                cells = [c for c in self._cells if c.counts]
                frames = [(c, progress_html(self.rt.run_id, self._rows(c, running), c.live()),
                           c.live()) for c in cells]
            for cell, page, live in frames:
                if page != cell.shown:
                    self._show(cell, page, here)
                if not live:
                    with self._lock:
                        if cell in self._cells:
                            self._cells.remove(cell)

    @staticmethod
    def _rows(cell: _Cell, running: dict[str, int]) -> list[tuple[str, int, int, int, int, int]]:
        out = []
        for name, (sub, done, failed, cancelled) in cell.counts.items():
            still = sub - done - failed - cancelled
            out.append((name, sub, done, min(running.get(name, 0), still), failed, cancelled))
        return out

    def _show(self, cell: _Cell, page: str, here: bool) -> None:
        cell.shown = page
        if cell.display is not None:
            if self.widgets:
                cell.display.value = page
            else:
                update_html(cell.display, page)
            return
        if here:
            cell.display = self._make(page)
        else:
            cell.display = cell.ctx.run(self._make, page)

    def _make(self, page: str) -> Any:
        if self.widgets:
            import ipywidgets
            w = ipywidgets.HTML(value=page)
            ipython("display").display(w)
            return w
        return show_html(page, display_id=True)
