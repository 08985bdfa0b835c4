"""Starting a program from an executor at the machine's spawn rate (node side).

``subprocess.Popen(preexec_fn=...)`` forks the whole executor in Python and
runs Python in the child before ``exec``: 3-4 ms a program on this project's
2-core machine, where ``os.posix_spawn`` (glibc: ``clone(CLONE_VFORK)`` and
``exec``, no Python in the child) takes the spawn itself, ~0.8 ms. So:

* programs start with :func:`os.posix_spawn`, stdin/stdout/stderr given by
  file actions, SIGPIPE and SIGXFSZ back to their defaults (what
  ``subprocess``'s ``restore_signals`` does); a working directory other than
  the executor's goes through ``subprocess`` without ``preexec_fn`` (vfork),
  since ``posix_spawn`` has no ``chdir`` before Python 3.13;
* a program leads a process group of its own (``setpgroup``): when it exits,
  its background children are ended with that group (:mod:`.process`);
* no Python runs in the child, so nothing can set ``PR_SET_PDEATHSIG`` there.
  Instead the executor publishes the running program's pid in a word of
  memory it shares with its agent (:class:`PidSlot`); whenever the agent kills
  an executor (``time_out``, cancellation, shutdown) or finds it dead, it sends
  that program's group SIGTERM first, as the death signal did; an executor
  whose agent died kills that group itself (:mod:`..lifeline`). The pid is
  cleared before the program is reaped (``waitid(WNOWAIT)`` first), so the slot
  never names a pid that could have been reused;
* descriptors: every descriptor taskflow opens is close-on-exec (Python's
  default). A Python task run by the same executor may have made one
  inheritable; after any Python task the next program start looks at
  ``/proc/self/fd`` once and closes such descriptors in the child (what
  ``close_fds=True`` did), until Python code runs again;
* the environment: the executor's ``os.environ`` plus what the task adds, built
  once and kept until a Python task runs in this executor (only Python code
  there can change ``os.environ``).
"""
from __future__ import annotations

import fcntl
import os
import signal
import sys
from typing import Any, Literal, overload

from ... import cgroups
from .. import taskenv
from ..programs import STATE, PidSlot, attach, python_ran

__all__ = ["PidSlot", "attach", "python_ran", "environment", "kept_environment", "devnull",
           "start", "reap", "SIGDEF",
           "signal_group", "group_members", "has_exited"]

SIGDEF = tuple(getattr(signal, s) for s in ("SIGPIPE", "SIGXFSZ", "SIGXFZ") if hasattr(signal, s))
_FD_DIR = "/proc/self/fd"


def environment(key: Any, extra: dict[str, str], threads: int | None = None) -> dict[str, str]:
    """``os.environ`` with ``extra`` (which ``key`` identifies), built once per key;
    ``threads``: ``extra`` is what a task on this node alone that holds that many
    computing units is told (:func:`kept_environment` finds it by them)."""
    st = STATE
    if st.env is not None and st.env_key == key:
        st.env_threads = threads
        return st.env
    env = dict(os.environ)
    for var in taskenv.DEFAULTED:       # (the executor's own one-thread default, not theirs)
        env.pop(var, None)
    env.update(extra)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    st.env, st.env_key, st.env_threads = env, key, threads
    return env


def kept_environment(threads: int) -> dict[str, str] | None:
    """The environment kept for a task on this node alone holding ``threads`` units, if
    the one kept is for such a task (no Python code ran since it was built)."""
    st = STATE
    if st.env_threads == threads and threads is not None:
        return st.env
    return None


def devnull() -> int:
    """A descriptor of ``/dev/null`` for programs' stdin, opened once per executor (not
    the caller's to close). After Python code ran it is looked at again: code that closed
    it may have left its number to another file (then a new one is opened; the old
    number is not ours to close)."""
    st = STATE
    fd = st.null
    if st.null_ok:
        return fd
    if fd >= 0:
        try:
            info = os.fstat(fd)
        except OSError:
            pass
        else:
            if (info.st_dev, info.st_ino) == st.null_id \
                    and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY:
                st.null_ok = True
                return fd
    fd = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
    info = os.fstat(fd)
    st.null, st.null_id, st.null_ok = fd, (info.st_dev, info.st_ino), True
    return fd


def _inheritable() -> list[int]:
    st = STATE
    if not st.fds_checked:
        leaky = []
        try:
            names = os.listdir(_FD_DIR)
        except OSError:
            names = []
        for name in names:
            fd = int(name)
            if fd > 2:
                try:
                    if os.get_inheritable(fd):
                        leaky.append(fd)
                except OSError:        # the directory's own descriptor, closed by now
                    pass
        st.leaky = leaky
        st.fds_checked = True
    return st.leaky


def start(path: str, argv: list[str], cwd: str, env: dict[str, str], stdin: int, stdout: int,
          stderr: int) -> int:
    """Start ``argv`` (``path`` resolved) with the three descriptors; return its pid.

    The pid goes into the executor's slot at once. Raises OSError when the
    program cannot be started. A task with a kernel memory limit starts its
    programs in its memory group (the executor is in it only for the spawn) or
    through ``systemd-run`` (:mod:`..limits`).
    """
    st = STATE
    if st.spawn_prefix is not None:
        argv = st.spawn_prefix + [path] + argv[1:]
        path, *_ = st.spawn_prefix
    group = st.spawn_group
    if group is None:
        return _start(path, argv, cwd, env, stdin, stdout, stderr)
    found = cgroups.memory_groups()
    group.add(os.getpid())
    try:
        return _start(path, argv, cwd, env, stdin, stdout, stderr)
    finally:
        if not isinstance(found, str):
            found.home.add(os.getpid())


def _start(path: str, argv: list[str], cwd: str, env: dict[str, str], stdin: int, stdout: int,
           stderr: int) -> int:
    # (the string working_dir just read there, or the same path: no chdir)
    if cwd is STATE.here or cwd == os.getcwd():
        actions: list[tuple[Any, ...]] = [(os.POSIX_SPAWN_DUP2, stdin, 0),
                                          (os.POSIX_SPAWN_DUP2, stdout, 1),
                                          (os.POSIX_SPAWN_DUP2, stderr, 2)]
        leaky = _inheritable()
        if leaky:
            actions.extend((os.POSIX_SPAWN_CLOSE, fd) for fd in leaky if fd not in (stdin, stdout, stderr))
        pid = os.posix_spawn(path, argv, env, file_actions=actions, setsigdef=SIGDEF,
                             setpgroup=0)
    else:
        # posix_spawn cannot chdir (Python < 3.13): subprocess without preexec_fn, which
        # uses vfork and leaves the child to C; the pid is ours to reap (see reap()).
        import subprocess       # (here: most programs run where the executor is, and
        # every agent would import it at its start, before its first task)
        proc = subprocess.Popen(argv, executable=path, cwd=cwd, env=env, stdin=stdin,
                                stdout=stdout, stderr=stderr, close_fds=True, **_OWN_GROUP)
        pid = proc.pid
        proc.returncode = 0      # Popen must never wait for it: reap() does
    slot = STATE.slot
    if slot is not None:
        slot.set(pid)
    return pid


# the program's own process group (setpgid(0, 0) in the child; setsid before Python 3.11)
_OWN_GROUP: dict[str, Any] = {"process_group": 0} if sys.version_info >= (3, 11) \
    else {"start_new_session": True}


@overload
def reap(pid: int) -> int: ...
@overload
def reap(pid: int, usage: Literal[True]) -> tuple[int, int]: ...


def reap(pid: int, usage: bool = False) -> int | tuple[int, int]:
    """Wait for ``pid`` to end; its exit code (-N: killed by signal N), and with ``usage``
    its peak resident set in bytes too (wait4).

    The slot is cleared while the ended program is still a zombie, so the
    agent never signals a pid that the system could have given to another
    process.
    """
    slot = STATE.slot
    if slot is not None:
        while True:
            try:
                os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)
                break
            except InterruptedError:     # pragma: no cover - PEP 475 retries
                continue
            except ChildProcessError:
                break
        slot.set(0)
    if usage:
        _, status, ru = os.wait4(pid, 0)
        return os.waitstatus_to_exitcode(status), int(ru.ru_maxrss) * 1024   # KiB on Linux
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to a program's process group; False when no process is left in it."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def has_exited(pid: int) -> bool:
    """Whether the program has exited (it stays a zombie: reap() takes its status)."""
    try:
        got = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return got is not None


def group_members(pgid: int) -> list[int]:
    """The processes of a process group (read from /proc)."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rpartition(b")")[2].split()
        except OSError:
            continue
        try:
            state, _, pgrp, *_ = fields
        except ValueError:
            continue
        if pgrp == str(pgid).encode() and state != b"Z":
            out.append(int(name))
    return sorted(out)
