"""An executor ends with its agent, whatever ends the agent (SIGKILL, the OOM killer).

An executor whose agent is gone has nobody to give its result to: the master
has counted the node lost and runs the task again elsewhere, or has failed the
run. Left alone it would run its task to the end anyway (writing its files a
second time, or after the run ended) and then sit there with nobody to read
its pipe. So, right after the fork (:meth:`taskflow.agent.pool.Pool.spawn`),
:func:`arm` ties the executor to the agent:

* on Linux, the parent-death signal (``prctl(PR_SET_PDEATHSIG, SIGTERM)``):
  the kernel sends SIGTERM when the agent dies. SIGTERM alone does not end an
  executor (a job step's SIGTERM reaches every process of the step, and the
  agent decides what a running task gets: :mod:`taskflow.agent.stops`), so
  its handler (a Python one: programs the executor starts get the default
  disposition back at exec) looks whether the agent is still its parent, and
  ends the executor only when it is not. The agent may die between the fork and the
  ``prctl``: the parent is looked at once more right after it;
* elsewhere, a thread that looks at the parent every :data:`POLL` seconds.

An executor that ends so takes along what it started: the program it runs
(its own process group, named in the executor's pid slot: :class:`.programs.PidSlot`)
and its own process group (itself, and what its Python tasks started). It
gets SIGKILL: there is nobody to report to, and nothing of the run may
outlive it. (A Python task that holds the interpreter in C code for a long
while ends when it gives it back: the handler runs between bytecodes.)
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import Any

from .programs import STATE

PR_SET_PDEATHSIG = 1
POLL = 0.5                 # s between looks at the parent where there is no death signal


class _Agent:
    """The pid of this executor's agent (0: not armed; in the agent itself too)."""

    __slots__ = ("pid",)

    def __init__(self) -> None:
        self.pid = 0


AGENT = _Agent()


def arm(agent: int) -> None:
    """In a newly forked executor: end when the agent ``agent`` (its parent) ends."""
    AGENT.pid = agent
    signal.signal(signal.SIGTERM, _on_sigterm)
    if not _death_signal(signal.SIGTERM):
        threading.Thread(target=_watch, daemon=True, name="taskflow-lifeline").start()
    if os.getppid() != agent:       # the agent died before the death signal was set
        end()


def orphaned() -> bool:
    """The agent that forked this executor is gone."""
    return AGENT.pid != 0 and os.getppid() != AGENT.pid


def end() -> None:
    """The agent is gone: SIGKILL the running program's group and this executor's own."""
    slot = STATE.slot
    if slot is not None:
        slot.terminate(signal.SIGKILL)
    try:
        if os.getpgid(0) == os.getpid():        # (its own group: pool.py sets it first)
            os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(1)


def _on_sigterm(signum: int, frame: Any) -> None:
    """SIGTERM: the agent's death (then end), or a job step's (ignored: the agent decides)."""
    if orphaned():
        end()


def _watch() -> None:
    while not orphaned():
        time.sleep(POLL)
    end()


def _death_signal(sig: int) -> bool:
    """Set this process's parent-death signal; False where there is none (not Linux)."""
    prctl = _PRCTL.get()
    return prctl is not None and prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) == 0


class _Prctl:
    """libc's ``prctl``, looked up once (in the agent, before it forks: its executors do
    not load ctypes each)."""

    __slots__ = ("fn", "looked")

    def __init__(self) -> None:
        self.fn: Any = None
        self.looked = False

    def get(self) -> Any:
        if not self.looked:
            self.looked = True
            if sys.platform.startswith("linux"):
                try:
                    import ctypes
                    self.fn = ctypes.CDLL(None, use_errno=True).prctl
                except (OSError, AttributeError):
                    self.fn = None
        return self.fn


_PRCTL = _Prctl()


def prepare() -> None:
    """In the agent, before it forks executors: look ``prctl`` up once for all of them."""
    _PRCTL.get()
