"""What an executor keeps about the programs it starts (see :mod:`.invokers.spawn`).

Apart from the invokers so that the agent and its executors import only this
(``mmap``, no ``subprocess`` or ``inspect``) until a program task comes: the
pid slot each executor shares with its agent, and what the executor may keep
between program starts until Python code runs in it again.
"""
from __future__ import annotations

import mmap
import os
import signal
from typing import Any, Callable


class PidSlot:
    """One word of memory shared by an agent and one of its executors (made before the fork).

    The executor writes the pid of the program it runs (0: none); the agent
    reads it to kill that program with the executor.
    """

    __slots__ = ("mem", "view")

    def __init__(self) -> None:
        self.mem = mmap.mmap(-1, mmap.PAGESIZE)      # anonymous and shared: survives fork
        self.view = memoryview(self.mem).cast("i")

    def set(self, pid: int) -> None:
        self.view[0] = pid

    def get(self) -> int:
        return int(self.view[0])

    def close(self) -> None:
        self.view.release()
        self.mem.close()

    def terminate(self, sig: int = signal.SIGTERM) -> int:
        """Signal the program the executor runs now, if any, with its process group (its
        children); return its pid (0: none)."""
        pid = self.get()
        if pid > 0:
            try:
                os.killpg(pid, sig)
            except (ProcessLookupError, PermissionError):
                try:
                    os.kill(pid, sig)
                except (ProcessLookupError, PermissionError):
                    pass
        return pid


class _State:
    """This executor's slot and what it keeps between program starts."""

    __slots__ = ("slot", "env_key", "env", "env_threads", "fds_checked", "leaky", "live",
                 "spawn_group", "spawn_prefix", "null", "null_id", "null_ok", "here")

    def __init__(self) -> None:
        self.slot: PidSlot | None = None
        # sends the running task's lines so far to the agent and empties the list it is
        # given (a long program's output travels while it runs: invokers.process)
        self.live: Callable[[list[Any]], None] | None = None
        # the cgroup a program starts in (a task's kernel memory limit: agent.executor.limits)
        self.spawn_group: Any = None
        # the command a program starts through (systemd-run --user --scope ...: agent.executor.limits)
        self.spawn_prefix: list[str] | None = None
        self.env_key: Any = None
        self.env: dict[str, str] | None = None
        # the threads of the task on this node alone that env was built for (None: another)
        self.env_threads: int | None = None
        # a descriptor of /dev/null kept for programs' stdin (-1: none yet) and its
        # (st_dev, st_ino); looked at again after Python code ran (it may have closed it)
        self.null = -1
        self.null_id: tuple[int, int] | None = None
        self.null_ok = False
        self.fds_checked = False
        self.leaky: list[int] = []     # inheritable descriptors > 2 found by the last look
        # the executor's working directory as the last program start's call found it (the
        # very string: a program given it starts here without a second getcwd)
        self.here: str | None = None


STATE = _State()


def attach(slot: PidSlot | None) -> None:
    """In a new executor: the slot its agent reads."""
    STATE.slot = slot


def python_ran() -> None:
    """Python code ran in this executor: ``os.environ`` and descriptors may have changed."""
    st = STATE
    st.env = st.env_threads = None
    st.fds_checked = False
    st.null_ok = False
    st.here = None


