"""The master was paused: a gap between two rounds of the loop far longer than a round.

The loop thread goes round at least once a second (its ``select`` waits at
most 1 s), so a gap of :data:`PAUSE_SAID` seconds or more between two rounds
means the whole process did not run: it was stopped (SIGSTOP, Ctrl-Z) or its
machine was frozen (a suspended VM, a laptop's sleep); or, if the process used
CPU time meanwhile, that it was too busy to go round (said as such). Nothing else in the
master notices: it sent no PING meanwhile, so the agents of an adoptable run
that heard nothing for their heartbeat time-out took it for lost (they keep
their running tasks and wait for it, agent/orphan.py, or exit when they kept
none); when it runs again, their streams are broken and the loop handles
those as losses (the nodes are reached again: recovery/comeback.py).

:class:`PauseWatch` says each pause once, on the console and in the journal,
with how long it was, so that the losses that follow are read for what they
are. The clock counts time the machine slept (``CLOCK_BOOTTIME``, where
there is one) and never jumps with the wall clock.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Callable

from ...events import NodeNote

if TYPE_CHECKING:
    from ..bus import EventBus

log = logging.getLogger(__name__)

PAUSE_SAID = 5.0    # s between two rounds of the loop (at most ~1 s apart) that is a pause
CPU_EVERY = 0.25    # s between readings of the process's CPU time (paused, or busy?)


def _clock() -> Callable[[], float]:
    """A clock that runs while the machine sleeps, if the platform has one."""
    boot = getattr(time, "CLOCK_BOOTTIME", None)
    if boot is not None:
        try:
            time.clock_gettime(boot)
            return lambda: time.clock_gettime(boot)
        except OSError:
            pass
    return time.monotonic


class PauseWatch:
    """The loop's rounds, watched for a pause (:meth:`tick` once a round)."""

    __slots__ = ("clock", "last", "last_cpu", "cpu_at", "used")

    def __init__(self) -> None:
        self.clock = _clock()
        self.last = self.clock()
        # the process's CPU time, read at most every CPU_EVERY s (a system call of a few
        # µs: not once a round), and when it was read
        self.last_cpu = time.process_time()
        self.cpu_at = self.last
        self.used = 0.0         # CPU seconds the process used over the last gap (and up to
        #                         CPU_EVERY s before it)

    def tick(self) -> float:
        """A round begins: the gap that ended just now in seconds, if it was one (else 0)."""
        now = self.clock()
        gap = now - self.last
        self.last = now
        if gap < PAUSE_SAID:
            if now - self.cpu_at >= CPU_EVERY:
                self.last_cpu, self.cpu_at = time.process_time(), now
            return 0.0
        cpu = time.process_time()
        self.used = cpu - self.last_cpu
        self.last_cpu, self.cpu_at = cpu, now
        return gap

    def say(self, gap: float, bus: EventBus, adoptable: bool) -> str:
        """Say a gap of ``gap`` seconds once: a warning, and a line in the journal. A stopped
        process uses no CPU time; one that did use it was busy, not paused (a very long
        garbage collection, a thread that held the run's lock): said so."""
        if self.used < gap / 4:
            text = (f"the master was paused for {gap:.0f} s (stopped by SIGSTOP or Ctrl-Z, or "
                    f"its machine frozen): it sent nothing to its nodes meanwhile")
        else:
            text = (f"the master's loop was held up for {gap:.0f} s (the process was busy: "
                    f"{self.used:.0f} s of CPU time): it sent nothing to its nodes meanwhile")
        if adoptable:
            text += ("; nodes that took it for lost are reached again, with the tasks they "
                     "kept")
        log.warning("%s", text)
        if bus.active:
            bus.emit(NodeNote("log", time.time(), 0, "", "master", ("TASKFLOW", text)))
        return text
