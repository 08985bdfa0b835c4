"""SIGINT and SIGTERM during `taskflow run`: the signal itself stops the run.

The handler still raises in the main thread (KeyboardInterrupt, or
:class:`~.interrupts.Terminated` for SIGTERM), so that a script unwinds as
it always did; but the stop does not depend on it. An application that
catches broad exceptions (a unittest runner, a bare ``except:`` around its
work) may record the exception and go on: the run stops all the same,
because the handler also writes the signal to a pipe that a watcher thread
reads (:class:`Signals`):

- the first signal: said on the console and in the journal; the run is
  interrupted (nothing new starts, running tasks get ``--grace`` seconds,
  finished outputs are put in place, the journal says ``interrupted``); the
  script's calls then end with the tasks' interruption;
- a second signal: said and journaled; the run ends at once (its nodes killed,
  the journal closed as interrupted). If the script has still not come back
  to taskflow by then (it caught both), the process exits at once with the
  interrupted run's summary and status.

The exit status is 128 + the first signal (130 for SIGINT, 143 for SIGTERM).
The handler does nothing but append to a list and write one byte (no lock
is taken in it: the main thread may hold any when the signal comes).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

import click

from .interrupts import Terminated

if TYPE_CHECKING:
    from ..runtime.runtime import Runtime


class Signals:
    """The run's SIGINT and SIGTERM, acted on by a watcher thread (see the module)."""

    def __init__(self, rt: Runtime, grace: float, last_words: Callable[[int], str]) -> None:
        """``grace``: seconds running tasks get; ``last_words(signum)``: the interrupted
        run's summary, printed when the process must exit from here."""
        self.rt = rt
        self.grace = grace
        self.last_words = last_words
        self.received: list[int] = []       # the signals, in order (the handler appends)
        self.raising = True         # the script runs: the handler raises in the main thread
        self.over = False           # the run's stop is over: a signal is ignored
        self._r, self._w = os.pipe()
        self._stopper: threading.Thread | None = None
        self._watcher = threading.Thread(target=self._watch, daemon=True,
                                         name="taskflow-signals")

    @property
    def first(self) -> int:
        """The first signal received (0: none)."""
        return self.received[0] if self.received else 0

    def install(self) -> None:
        """Main thread: SIGINT and SIGTERM come here from now on."""
        os.set_blocking(self._w, False)
        self._watcher.start()
        signal.signal(signal.SIGINT, self._on_signal)
        signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum: int, frame: Any) -> None:
        if signum == signal.SIGINT and _wall_clock_reached():
            raise KeyboardInterrupt()   # (no signal: runcompss's limit makes it its error)
        if self.over:
            return                      # (the run is over: nothing left to stop)
        self.received.append(signum)
        try:
            os.write(self._w, bytes([signum]))
        except OSError:
            pass
        if self.raising:
            raise Terminated() if signum == signal.SIGTERM else KeyboardInterrupt()

    def script_done(self) -> None:
        """Main thread: the script (and the wait for its tasks) ended; a signal from now on
        is the watcher's alone (nothing is raised in the driver's own steps)."""
        self.raising = False

    def finish(self) -> None:
        """Main thread, after the script: wait until the stop the signals started is over
        (the run interrupted, or killed by a second signal); then the watcher ends."""
        self.raising = False
        if self.received:
            while self._stopper is None:        # (the watcher starts it at once)
                time.sleep(0.01)
            self._stopper.join()
        self.over = True            # a later signal is ignored (the run is over)
        os.write(self._w, b"\0")    # the watcher reads 0: it ends (the pipe stays open: a
        self._watcher.join()        # late signal must not write to a reused descriptor)

    # -- the watcher thread ------------------------------------------------------------
    def _next(self) -> int:
        """The next signal written to the pipe; 0 when the run's stop is over (finish)."""
        while True:
            try:
                got = os.read(self._r, 1)
            except InterruptedError:
                continue
            except OSError:
                return 0
            return got[0] if got else 0

    def _watch(self) -> None:
        rt = self.rt
        signum = self._next()
        if not signum:
            return
        name = signal.Signals(signum).name
        self._say(f"{name}: stopping the run: no new task starts; running tasks have "
                  f"{self.grace:g} s to end before they are killed (--grace); press Ctrl-C "
                  f"again, or send the signal again, to end at once")
        stopper = threading.Thread(target=rt.interrupt, args=(name, self.grace),
                                   daemon=True, name="taskflow-interrupt")
        stopper.start()
        self._stopper = stopper     # (started: finish joins it)
        second = self._next()
        if not second:
            return
        name2 = signal.Signals(second).name
        self._say(f"second signal ({name2}): ending at once")
        rt.kill(name)
        if self.raising:        # the script caught both: the process ends here
            stopper.join()
            click.echo(self.last_words(signum), err=True)
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(128 + signum)

    def _say(self, text: str) -> None:
        """On the console, and in the journal (a line of the master's) while it is open."""
        click.echo(f"taskflow: {text}", err=True)
        self.rt.node_event("log", "master", ("TASKFLOW", text))


def _wall_clock_reached() -> bool:
    """A PyCOMPSs application's wall clock limit, armed from a thread other than the main
    one, stops it with ``_thread.interrupt_main()``, which calls this SIGINT handler
    without a signal (compat/wall_clock_limit.py): not an interrupt of the run."""
    limit = sys.modules.get("taskflow.compat.wall_clock_limit")
    return limit is not None and bool(limit.reached.is_set())

