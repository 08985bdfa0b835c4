"""Every process the node's tasks start, and their end with the agent.

A program's background children end with its process group when it exits
(:mod:`.executor.invokers.process`); a process that left that group (``setsid``, a
daemon that forked twice) or that a Python task started is still the run's.
The agent keeps track of all of them, and when it ends (the run ended, or
its master is gone) they get SIGTERM and, ``GRACE`` seconds later, SIGKILL:

* as a **sub-reaper** (``PR_SET_CHILD_SUBREAPER``, the default): an orphan
  below the agent is given to the agent instead of to init, so the agent finds
  it among its own children (and reaps those that end meanwhile);
* with ``TASKFLOW_NODE_TRACKING=cgroup``, in a control group of its own where
  the node lets the agent make one (:mod:`.cgroups`): the agent moves into it
  before it forks its executors, so everything below it is in the group
  whatever it does with its sessions and parents, even after the agent is
  gone. (Moving a process costs the kernel milliseconds, which the default
  does not pay at every agent's start.) Where no group can be made, the
  sub-reaper is used.
"""
from __future__ import annotations

import os
import signal
import time

from . import cgroups

TRACKING_ENV = "TASKFLOW_NODE_TRACKING"      # "subreaper" (default) | "cgroup"
GRACE = 1.0                 # s between SIGTERM and SIGKILL of what is left at the end
REAP_EVERY = 1.0            # s between looks for ended orphans (sub-reaper)
PR_SET_CHILD_SUBREAPER = 36


class Tracker:
    """The agent's record of what its tasks started (made before it forks executors)."""

    def __init__(self) -> None:
        cgroups.AGENT[:] = [os.getpid()]    # executors inherit it (their memory groups)
        self.group: cgroups.Group | None = None
        self.why = ""
        if os.environ.get(TRACKING_ENV) == "cgroup":
            got = cgroups.tracking_group()
            if isinstance(got, str):
                self.why = got
                import logging      # (here: ~4 ms of an agent's start otherwise)
                logging.getLogger("taskflow.node").warning(
                    "no cgroup to track the tasks' processes (%s): tracking them as their "
                    "sub-reaper", got)
            else:
                self.group = got
        self.subreaper = False
        self.next_reap = 0.0

    def arm(self) -> None:
        """Become the sub-reaper, unless a cgroup tracks the processes."""
        if self.group is None:
            self.subreaper = _set_subreaper()

    @property
    def how(self) -> str:
        if self.group is not None:
            return f"cgroup {self.group.path}"
        return "sub-reaper" if self.subreaper else "none (not Linux)"

    def reap(self, executors: set[int], now: float) -> None:
        """Reap orphans given to the agent that have ended (sub-reaper; every REAP_EVERY s)."""
        if not self.subreaper or now < self.next_reap:
            return
        self.next_reap = now + REAP_EVERY
        for pid in _children():
            if pid not in executors:
                try:
                    os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    pass

    def end(self) -> int:
        """The agent ends (its executors are gone): end what its tasks left; how many."""
        n = 0
        if self.group is not None:
            cgroups.leave(self.group)
            n += self.group.end(GRACE)
        if self.subreaper:
            n += _end_children(GRACE)
        cgroups.remove(self.group)
        return n


def _set_subreaper() -> bool:
    try:
        import ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):        # not Linux: orphans go to init
        return False


def _children() -> list[int]:
    """This process's children (those it adopted as sub-reaper included)."""
    out: list[int] = []
    try:
        threads = os.listdir("/proc/self/task")
    except OSError:
        return out
    for t in threads:
        try:
            with open(f"/proc/self/task/{t}/children") as f:
                out.extend(int(x) for x in f.read().split())
        except (OSError, ValueError):
            pass
    return out


def _end_children(grace: float) -> int:
    """SIGTERM every child (adopted orphans), SIGKILL them after ``grace``; reap them all.

    A killed daemon's own children are given to this process in turn, so this
    looks again until none is left.
    """
    seen: set[int] = set()
    deadline = time.monotonic() + grace
    killing = False
    while True:
        _reap_all()
        kids = _children()
        if not kids:
            break
        for pid in kids:
            if pid not in seen or killing:
                seen.add(pid)
                try:
                    os.kill(pid, signal.SIGKILL if killing else signal.SIGTERM)
                except ProcessLookupError:
                    pass
        if time.monotonic() >= deadline + grace:
            break               # (something that cannot be killed: do not hang the agent)
        if time.monotonic() >= deadline:
            killing = True
        time.sleep(0.02)
    _reap_all()
    return len(seen)


def _reap_all() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
