"""Running one external program (node side): streams, log capture, exit code, its children.

The program's stdout and stderr, unless a stream parameter takes them, are
read as they come: each line goes into the task's log list as
``(time, "STDOUT" | "STDERR", text)`` (``"RAW"`` for bytes that are not
UTF-8; lines cut and ``\\r`` handled as :mod:`..loglines` says) and, byte for
byte, into ``<log_dir>/job<task id>.out`` / ``.err`` so a failed task's error
can say where to look. A job file is made when the program first writes to
its stream; a program that exits non-zero has both. A program that runs for a
while sends its lines on as they come (at most every ``STREAM_EVERY`` s, or
whenever ``LIVE_BYTES`` wait), so memory holds at most that much of them.

The task ends when the program exits, not when its pipes close: the program
leads a process group of its own (:mod:`.spawn`), and when it exits that
group gets SIGTERM, its pipes are read for ``DRAIN`` s more, and what is left
of the group then gets SIGKILL. With ``keep_background`` the group is left
running and the task's log names its processes; they end with the run (the
agent's process tracking, :mod:`..tracking`), as do children that left the
group (``setsid``, daemons).
"""
from __future__ import annotations

import errno
import os
import select
import shutil
import signal
import time
from collections import deque
from typing import TYPE_CHECKING, Any

from ....errors import ProgramFailed
from .. import loglines
from ..programs import STATE
from . import spawn

if TYPE_CHECKING:
    from ....wire.messages import LineWire

LOG_CAP = 10000       # lines kept per program (as the executor's cap per stream)
last_peak = 0         # bytes: the largest peak resident set of a program waited for (agent.executor.usage)
client_only = False   # the program was a container engine's client: its peak is not the task's
TAIL = 20             # stderr lines quoted in a failure
DRAIN = 0.25          # s the pipes are read after the program exited (its group got SIGTERM)
EXIT_LOOK = 0.05      # s of silent pipes before the program's exit is watched too (a pidfd)
STREAM_AFTER = 0.5    # s: a program running longer sends its lines on while it runs...
STREAM_EVERY = 0.2    # ...at most this often...
LIVE_BYTES = 4 * loglines.ROW_MAX     # ...or whenever this much waits


class _JobFiles:
    """``<log_dir>/job<id>.out`` / ``.err`` of one program, made when it first writes there.

    Most programs of a large run print nothing; creating two empty files each
    cost more than starting them (0.5 ms per creation was measured in a fresh
    directory of this project's machine). A program that exits non-zero gets
    both, so its error can always name them.
    """

    __slots__ = ("base", "fds", "streams")

    EXT = {"stdout": ".out", "stderr": ".err"}

    def __init__(self, base: str | None, streams: tuple[str, ...]) -> None:
        self.base = base
        self.streams = streams          # the streams captured (not given to a file parameter)
        self.fds: dict[str, int] = {}

    def path(self, name: str) -> str | None:
        return self.base + self.EXT[name] if self.base is not None else None

    def write(self, name: str, chunk: bytes) -> None:
        if self.base is None:
            return
        fd = self.fds.get(name)
        if fd is None:
            fd = self.fds[name] = _create(self.base + self.EXT[name], os.O_TRUNC)
        _write_all(fd, chunk)

    def make_all(self) -> tuple[str, ...]:
        """Create the files not made yet; return the paths of all of them."""
        if self.base is None:
            return ()
        for name in self.streams:
            if name not in self.fds:
                self.fds[name] = _create(self.base + self.EXT[name], os.O_TRUNC)
        return tuple(self.base + self.EXT[name] for name in self.streams)

    def close(self) -> None:
        for fd in self.fds.values():
            os.close(fd)
        self.fds = {}


def run(argv: list[str], cwd: str, env: dict[str, str], streams: dict[str, tuple[str, str]],
        logs: list[LineWire], log_base: str | None, fail: bool,
        keep_background: bool = False) -> int:
    """Run ``argv``; return its exit code (raise :class:`ProgramFailed` when ``fail``).

    The first item of ``argv`` is the program (a path, or a name looked up on ``env``'s
    PATH). It starts through :mod:`.spawn` (posix_spawn, no Python in the child).
    """
    opened: list[int] = []          # descriptors of files this run opened
    ends: list[int] = []            # the pipes' write ends, until the program has them
    captured = _BOTH if not streams else \
        tuple(name for name in _BOTH if name not in streams)
    files = _JobFiles(log_base, captured)
    try:
        if "stdin" in streams:
            stdin = os.open(streams["stdin"][0], os.O_RDONLY | os.O_CLOEXEC)
            opened.append(stdin)
        else:
            stdin = spawn.devnull()         # (the executor's own, kept open)
        child: dict[str, int] = {}
        pipes: dict[str, int] = {}
        for name in _BOTH:
            if name in streams:
                path, direction = streams[name]
                fd = _create(path, os.O_APPEND if direction == "INOUT" else os.O_TRUNC)
                opened.append(fd)
            else:
                r, fd = os.pipe()
                pipes[name] = r
                ends.append(fd)
            child[name] = fd
        try:
            prog, *_ = argv
            pid = spawn.start(_program(prog, env), argv, cwd, env, stdin, child["stdout"],
                              child["stderr"])
        except OSError as exc:
            for r in pipes.values():
                os.close(r)
            raise ProgramFailed(f"could not start {_shown(argv)}: {exc}", 127, argv) \
                from None
        while ends:                 # the child has its ends: close ours, so EOF comes
            os.close(ends.pop())
        tail: deque[str] = deque(maxlen=TAIL)
        try:
            if pipes:
                _pump(pid, pipes, files, logs, tail, keep_background)
            code = _reap(pid, keep_background)
        except KeyboardInterrupt:       # the run is interrupted: SIGTERM the program (its
            spawn.signal_group(pid, signal.SIGTERM)     # group) and wait for it (after the
            spawn.reap(pid)             # grace period the agent kills what is left)
            raise
        if keep_background:
            _say_kept(pid, logs)
        job_logs = files.make_all() if code != 0 else ()
    finally:
        files.close()
        for fd in opened:
            os.close(fd)
        for fd in ends:
            os.close(fd)
    if code != 0 and fail:
        paths = job_logs + tuple(streams[s][0] for s in ("stdout", "stderr") if s in streams)
        how = f"exit code {code}" if code >= 0 else f"killed by {_signame(-code)}"
        msg = [f"command {_shown(argv)} failed with {how} (in {cwd})"]
        if tail:
            msg.append("last stderr lines:\n  " + "\n  ".join(tail))
        elif "stderr" in streams:
            msg.append(f"stderr went to {streams['stderr'][0]}")
        if paths:
            msg.append("logs: " + ", ".join(paths))
        raise ProgramFailed("\n".join(msg), code, argv, paths)
    return code


def _reap(pid: int, keep: bool) -> int:
    """Wait for the program, then end what is left of its group (unless ``keep``); keep its
    peak resident set (``last_peak``, agent.executor.usage).

    After the leader is reaped its group id cannot be reused while a member is
    left, so one SIGTERM to the group tells whether there are any (none: ESRCH)."""
    global last_peak
    code, peak = spawn.reap(pid, usage=True)
    last_peak = max(last_peak, peak)
    if not keep and spawn.signal_group(pid, signal.SIGTERM):
        # background processes that do not hold the pipes: SIGKILL those left after DRAIN
        # (a member may be an orphan's zombie that init reaps later: not waited for)
        deadline = time.monotonic() + DRAIN
        while time.monotonic() < deadline and spawn.group_members(pid):
            time.sleep(0.02)
        spawn.signal_group(pid, signal.SIGKILL)
    return code


def _say_kept(pid: int, logs: list[LineWire]) -> None:
    left = spawn.group_members(pid)
    if left:
        logs.append((time.time(), "RAW", f"[taskflow] the program left {len(left)} background "
                     f"process(es) running (keep_background=True): pid {', '.join(map(str, left))}"
                     f"; they are ended when the run ends"))


_WRITE = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC
_HUP = select.POLLHUP
_BOTH = ("stdout", "stderr")


def _create(path: str, how: int) -> int:
    """Open ``path`` for writing (``how``: O_TRUNC or O_APPEND), making its folder if missing."""
    try:
        return os.open(path, _WRITE | how, 0o666)
    except FileNotFoundError:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        return os.open(path, _WRITE | how, 0o666)


def _program(name: str, env: dict[str, str]) -> str:
    """The file to run: ``name`` itself when it is a path, else looked up on env's PATH
    (as subprocess does; ``invokers.run`` resolved the task's binary already)."""
    if os.sep in name:
        return name
    found = shutil.which(name, path=env.get("PATH", os.defpath))
    if found is None:
        raise FileNotFoundError(errno.ENOENT, f"'{name}' was not found on PATH", name)
    return found


class _Rows:
    """Where a program's lines go: the task's log list, capped, sent on while it runs.

    Past TASK_BYTES of them the journal gets one row that names the job file
    (which has every byte), and no more."""

    __slots__ = ("logs", "tail", "kept", "dropped", "held", "total", "t0", "t_sent", "files")

    def __init__(self, logs: list[LineWire], tail: deque[str], files: _JobFiles) -> None:
        self.logs = logs
        self.tail = tail
        self.files = files
        self.kept = 0
        self.dropped = 0
        self.held = 0                   # bytes in logs not sent on yet
        self.total = 0                  # bytes in rows for the journal so far
        self.t0 = self.t_sent = time.time()

    def add(self, rows: list[bytes], level: str, stderr: bool) -> None:
        t = time.time()
        logs = self.logs
        for raw in rows:
            text, lvl = _decode(raw, level)
            if stderr:
                self.tail.append(text if len(text) < 1000 else text[:1000] + " [...]")
            if self.total > loglines.TASK_BYTES:
                continue                # (in the job file, as the row before said)
            if self.kept < LOG_CAP:
                logs.append((t, lvl, text))
                self.kept += 1
                self.held += len(raw)
                self.total += len(raw)
                if self.total > loglines.TASK_BYTES:
                    where = ", ".join(self.files.make_all()) or "nowhere (no job log here)"
                    logs.append((t, "RAW", f"[taskflow] the program's output past "
                                 f"{loglines.TASK_BYTES >> 20} MiB is not in the journal; "
                                 f"all of it is in {where}"))
            else:
                self.dropped += 1
        if self.held > LIVE_BYTES or (t - self.t0 > STREAM_AFTER and t - self.t_sent > STREAM_EVERY):
            self.send_on(t)

    def send_on(self, t: float) -> None:
        live = STATE.live
        if live is not None and self.logs:
            live(self.logs)     # the executor sends the task's lines so far, emptying the list
        self.held = 0
        self.t_sent = t

    def end(self) -> None:
        if self.dropped:
            self.logs.append((time.time(), "RAW", f"[taskflow] {self.dropped} more program "
                              f"output lines dropped (cap {LOG_CAP} lines per task)"))


def _pump(pid: int, pipes: dict[str, int], files: _JobFiles, logs: list[LineWire],
          tail: deque[str], keep: bool) -> None:
    """Read the program's captured streams until they end, or until DRAIN s after the
    program exited (its group got SIGTERM then; SIGKILL when they still hold the pipes).

    The program's exit is watched (a pidfd) only once its pipes were quiet for
    EXIT_LOOK s: a short program costs no more than reading its pipes."""
    poll = select.poll()
    what: dict[int, list[Any]] = {}       # fd -> [stream, level, its Lines (at the first byte)]
    for name, fd in pipes.items():
        poll.register(fd, select.POLLIN)
        what[fd] = [name, "STDOUT" if name == "stdout" else "STDERR", None]
    rows: _Rows | None = None
    pidfd = -1
    exited = False
    timeout: float | None = EXIT_LOOK * 1000
    drain_end = 0.0
    try:
        while what:
            ready = poll.poll(timeout)
            if not ready:
                if exited:                   # drained: the rest of the group holds the pipes
                    break
                pidfd = _watch_exit(pid, poll)
                timeout = None if pidfd >= 0 else EXIT_LOOK * 1000
                if pidfd < 0 and spawn.has_exited(pid):
                    exited, drain_end = True, _exited(pid, keep)
                    timeout = DRAIN * 1000
                continue
            for fd, ev in ready:
                if fd == pidfd:
                    poll.unregister(pidfd)
                    exited, drain_end = True, _exited(pid, keep)
                    continue
                entry = what[fd]
                name, level, lines = entry
                # hung up with nothing left in it (no POLLIN): its end, without a read
                chunk = b"" if ev == _HUP else os.read(fd, 65536)
                if not chunk:
                    poll.unregister(fd)
                    del what[fd]
                    os.close(fd)
                    if lines is None:
                        continue
                    got = lines.flush()
                else:
                    files.write(name, chunk)
                    if lines is None:
                        lines = entry[2] = loglines.Lines(b"", files.path(name))
                    got = lines.add(chunk)
                if got:
                    if rows is None:
                        rows = _Rows(logs, tail, files)
                    rows.add(got, level, name == "stderr")
            if exited:
                timeout = max(0.0, drain_end - time.monotonic()) * 1000
    finally:
        for fd, (name, level, lines) in what.items():
            got = lines.flush() if lines is not None else None
            if got:
                if rows is None:
                    rows = _Rows(logs, tail, files)
                rows.add(got, level, name == "stderr")
            os.close(fd)
        if pidfd >= 0:
            os.close(pidfd)
        if rows is not None:
            rows.end()
    if what and exited and not keep:
        spawn.signal_group(pid, signal.SIGKILL)     # they kept the pipes past DRAIN


def _watch_exit(pid: int, poll: select.poll) -> int:
    """A pidfd of the program in ``poll`` (readable when it exits); -1 where there is none."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return -1
    poll.register(fd, select.POLLIN)
    return fd


def _exited(pid: int, keep: bool) -> float:
    """The program exited while its pipes are open: end its group (unless ``keep``); the
    pipes are read until the time returned (DRAIN more seconds)."""
    if not keep:
        spawn.signal_group(pid, signal.SIGTERM)
    return time.monotonic() + DRAIN


def _write_all(fd: int, data: bytes) -> None:
    with memoryview(data) as view:
        done = 0
        while done < len(view):
            done += os.write(fd, view[done:])


def _decode(raw: bytes, level: str) -> tuple[str, str]:
    try:
        return raw.decode("utf-8"), level
    except UnicodeDecodeError:
        return raw.decode("utf-8", "backslashreplace"), "RAW"


def _signame(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _shown(argv: list[str]) -> str:
    """A command line as a shell would read it back, for an error's message."""
    import shlex            # (here: only failures need it, not every agent's start)
    return shlex.join(argv)
