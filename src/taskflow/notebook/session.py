"""``taskflow.start()`` / ``taskflow.stop()`` in a Jupyter kernel.

In a kernel (an IPython shell with a ``kernel``), ``start`` also:

- shows one line: the run id, its nodes and slots, the monitor's link when
  ``monitor=`` asked for one (:func:`.html.banner_html`);
- follows the run's tasks with a live display in the output of each cell that
  calls them (:class:`.live.LiveProgress`; ipywidgets when installed and
  ``progress="widgets"`` or ``"auto"``, an updating HTML display otherwise);
- hooks the cells' ends (``post_run_cell``): a cell interrupted (the stop
  button: SIGINT, a KeyboardInterrupt in the cell) cancels every task that
  has not ended, as Ctrl-C stops a script's running tasks; the run goes on,
  and the next cells may call tasks again;
- ends the run when the kernel shuts down or restarts (``atexit``): at once,
  journaled as interrupted when tasks were still running. A kernel killed
  (SIGKILL) leaves nothing either: the agents see their master's stream end
  and exit, since a kernel's run is started with ``adopt_grace=0`` unless
  asked otherwise (no later master could adopt a kernel's tasks; ``resume=``
  runs them again).

``stop`` brings every display to its final counts, shows the run
(:func:`.html.run_html`), and journals the run as a script's run is. Called
twice, ``start`` returns the running runtime and says so. Outside a kernel
``start`` and ``stop`` are the plain ones.
"""
from __future__ import annotations

import atexit
import os
import sys
from typing import TYPE_CHECKING, Any

from . import html

if TYPE_CHECKING:
    from ..runtime.runtime import Runtime
    from .live import LiveProgress

PROGRESS = ("auto", "widgets", "html", "off")
PROGRESS_ENV = "TASKFLOW_NOTEBOOK_PROGRESS"     # the default of start(progress=): "auto" unset


def kernel_shell() -> Any | None:
    """The IPython shell of the Jupyter kernel this runs in (None: not in a kernel)."""
    ipy = sys.modules.get("IPython")
    if ipy is None:
        return None
    shell = ipy.get_ipython()
    return shell if shell is not None and getattr(shell, "kernel", None) is not None else None


def _widgets_available() -> bool:
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


class Session:
    """A run started in a kernel: its hooks, its progress displays, its monitor."""

    def __init__(self, rt: Runtime, shell: Any, progress: str, monitor: Any) -> None:
        self.rt = rt
        self.shell = shell
        self.monitor = monitor
        self.live: LiveProgress | None = None
        if progress != "off":
            from .live import LiveProgress
            widgets = progress == "widgets" or (progress == "auto" and _widgets_available())
            self.live = LiveProgress(rt, widgets=widgets)
            self.live.cell_started()        # (this cell's pre_run_cell has passed)
        shell.events.register("pre_run_cell", self._pre_run_cell)
        shell.events.register("post_run_cell", self._post_run_cell)
        atexit.register(self._at_exit)

    def _pre_run_cell(self, info: Any = None) -> None:
        if self.live is not None:
            self.live.cell_started()

    def _post_run_cell(self, result: Any = None) -> None:
        err = getattr(result, "error_in_exec", None)
        if isinstance(err, KeyboardInterrupt) and not self.rt.stopped:
            why = "the kernel was interrupted (KeyboardInterrupt)"
            n = self.rt.cancel_all(why)
            if n:
                self.rt.node_event("log", "master", ("TASKFLOW", f"{why}: {n} task(s) cancelled"))
                print(f"taskflow: {why}: {n} task(s) that had not ended were cancelled; the "
                      f"run goes on (taskflow.stop() ends it)", file=sys.stderr)
        if self.live is not None:
            self.live.cell_ended()

    def end(self, card: bool = True) -> None:
        """The run has stopped: final displays, the run's card (``card``), hooks off."""
        self._unhook()
        if self.live is not None:
            self.live.close()
        if self.monitor is not None:
            self.monitor.stop(grace=1.0)
        if card:
            html.show_html(html.run_card(self.rt))

    def _unhook(self) -> None:
        for event, fn in (("pre_run_cell", self._pre_run_cell),
                          ("post_run_cell", self._post_run_cell)):
            try:
                self.shell.events.unregister(event, fn)
            except ValueError:
                pass
        atexit.unregister(self._at_exit)

    def _at_exit(self) -> None:
        """The kernel shuts down (or restarts) with the run on: end it now."""
        rt = self.rt
        if rt.stopped:
            return
        if rt.tally.active:
            rt.kill("the kernel shut down while tasks ran")
        else:
            rt.stop(wait=False)


_session: Session | None = None


def start(workers: int | None, monitor: bool | int, progress: str | None,
          kwargs: dict[str, Any]) -> Runtime:
    """``taskflow.start`` (see the module)."""
    global _session
    from ..errors import UsageError
    from ..runtime import current
    from ..runtime.runtime import Runtime
    if progress is None:
        progress = os.environ.get(PROGRESS_ENV) or "auto"
        where = f"${PROGRESS_ENV}={progress!r}"
    else:
        where = f"taskflow.start(progress={progress!r})"
    if progress not in PROGRESS:
        raise UsageError(f"{where}: give one of {', '.join(PROGRESS)}")
    if progress == "widgets" and not _widgets_available():
        from .._version import install_hint
        raise UsageError(f"{where}: ipywidgets is not installed ({install_hint('notebook')}), "
                         f"or give progress='html'")
    shell = kernel_shell()
    rt = current.get()
    if rt is not None:
        if shell is None:
            raise RuntimeError(f"a taskflow runtime is already running (run {rt.run_id}); call "
                               f"taskflow.stop() first")
        given = " (the arguments given now are not applied: taskflow.stop() first)" \
            if workers is not None or kwargs or monitor else ""
        html.show_html(html.banner_html(rt, note=f"already running{given}"))
        return rt
    old = _session
    if old is not None:         # its run was stopped otherwise (rt.stop()): hooks off
        _session = None
        old.end(card=False)
    if shell is not None:
        kwargs.setdefault("adopt_grace", 0.0)
    from ..debugging import inline      # TASKFLOW_INLINE=1: every task in the calling thread
    rt = (inline.InlineRuntime if inline.wanted() else Runtime)(workers=workers, **kwargs).start()
    mon = None
    if monitor is not False and monitor is not None:
        mon = _monitor(rt.run_dir if rt.journal is not None else None, rt.run_id,
                       0 if monitor is True else int(monitor))
    if shell is None:
        if mon is not None:
            print(f"taskflow monitor: {mon.url}", file=sys.stderr)
        return rt
    _session = Session(rt, shell, progress, mon)
    html.show_html(html.banner_html(rt, mon.url if mon is not None else None))
    html.shown_in_cell(rt.run_id, shell.execution_count)   # (as the cell's value: not twice)
    return rt


def _monitor(run_dir: str | None, run_id: str, port: int) -> Any:
    """The web monitor of the run (``run_dir`` None: the run keeps no journal)."""
    if run_dir is None:
        raise RuntimeError("taskflow.start(monitor=...): the monitor reads the journal, which "
                           "this run does not keep (journal=False)")
    from ..monitor import Monitor
    return Monitor(os.path.dirname(run_dir), run_id, port=port).start()


def stop(wait: bool, code: int) -> None:
    """``taskflow.stop`` (see the module)."""
    global _session
    from ..runtime import current
    rt = current.get()
    if rt is None:
        return
    sess, _session = (_session, None) if _session is not None and _session.rt is rt \
        else (None, _session)
    try:
        if wait and not code and sess is not None:
            try:
                rt.wait_all()       # interruptible: the stop button ends the run, interrupted
            except KeyboardInterrupt as exc:
                rt.script_ended(exc)
                rt.stop(wait=False)
                raise
        rt.stop(wait=wait, code=code)
    finally:
        if sess is not None:
            sess.end()
