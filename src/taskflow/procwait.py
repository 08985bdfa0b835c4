"""Wait for a child process to exit, with a time-out, woken by the exit itself.

``subprocess.Popen.wait(timeout)`` polls: it sleeps 0.5 ms, then twice as long
each time up to 50 ms, so it sees an exit up to half the wait late (the end of
a run waited ~140 ms for a journal writer and an agent that had exited in
~80). On Linux a pidfd becomes readable when the process exits: one ``select``
on it wakes at the exit, within the same time-out. Elsewhere (no
``os.pidfd_open``, or a kernel without it) it is ``Popen.wait(timeout)``.
"""
from __future__ import annotations

import os
import select
import subprocess


def wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> int:
    """``proc``'s exit status once it has exited, waiting ``timeout`` seconds at most
    (:class:`subprocess.TimeoutExpired` after that, as ``Popen.wait``)."""
    if proc.returncode is not None:
        return proc.returncode
    try:
        fd = os.pidfd_open(proc.pid)        # type: ignore[attr-defined,unused-ignore]
    except (AttributeError, OSError):       # (no pidfd here; or reaped already: wait says)
        return proc.wait(timeout)
    try:
        if proc.returncode is None:         # (not reaped meanwhile by another thread's wait)
            poll = select.poll()
            poll.register(fd, select.POLLIN)
            if not poll.poll(max(0.0, timeout) * 1000):
                raise subprocess.TimeoutExpired(proc.args, timeout)
    finally:
        os.close(fd)
    return proc.wait()      # (it has exited: this reaps it, or waits for the thread that does)
