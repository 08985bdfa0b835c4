"""Running one external program (node side): streams, log capture, exit code.

The program's stdout and stderr, unless a stream parameter takes them, are
read line by line as they come: each line goes into the task's log list as
``(time, "STDOUT" | "STDERR", text)`` (``"RAW"`` for bytes that are not
UTF-8) and, byte for byte, into ``<log_dir>/job<task id>.out`` / ``.err`` so
a failed task's error can say where to look. A job file is made when the
program first writes to its stream; a program that exits non-zero has both.
"""
from __future__ import annotations

import errno
import os
import select
import shlex
import shutil
import signal
import time
from collections import deque
from typing import TYPE_CHECKING

from ...errors import ProgramFailed
from . import spawn

if TYPE_CHECKING:
    from ...wire.messages import LineWire

LOG_CAP = 10000       # lines kept in the task's log list (as the executor's cap)
last_peak = 0         # bytes: the largest peak resident set of a program waited for (agent.usage)
TAIL = 20             # stderr lines quoted in a failure


class _JobFiles:
    """``<log_dir>/job<id>.out`` / ``.err`` of one program, made when it first writes there.

    Most programs of a large run print nothing; creating two empty files each
    cost more than starting them (0.5 ms per creation was measured in a fresh
    directory of this project's machine). A program that exits non-zero gets
    both, so its error can always name them.
    """

    __slots__ = ("base", "fds", "streams")

    EXT = {"stdout": ".out", "stderr": ".err"}

    def __init__(self, base: str | None, streams: list[str]) -> None:
        self.base = base
        self.streams = streams          # the streams captured (not given to a file parameter)
        self.fds: dict[str, int] = {}

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
        logs: list[LineWire], log_base: str | None, fail: bool) -> int:
    """Run ``argv``; return its exit code (raise :class:`ProgramFailed` when ``fail``).

    The first item of ``argv`` is the program (a path, or a name looked up on ``env``'s
    PATH).
    It starts through :mod:`.spawn` (posix_spawn, no Python in the child).
    """
    opened: list[int] = []
    captured = [name for name in ("stdout", "stderr") if name not in streams]
    files = _JobFiles(log_base, captured)
    try:
        if "stdin" in streams:
            stdin = os.open(streams["stdin"][0], os.O_RDONLY | os.O_CLOEXEC)
        else:
            stdin = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        opened.append(stdin)
        child: dict[str, int] = {}
        pipes: dict[str, int] = {}
        for name in ("stdout", "stderr"):
            if name in streams:
                path, direction = streams[name]
                fd = _create(path, os.O_APPEND if direction == "INOUT" else os.O_TRUNC)
            else:
                r, fd = os.pipe()
                pipes[name] = r
            opened.append(fd)
            child[name] = fd
        try:
            prog, *_ = argv
            pid = spawn.start(_program(prog, env), argv, cwd, env, stdin, child["stdout"],
                              child["stderr"])
        except OSError as exc:
            for r in pipes.values():
                os.close(r)
            raise ProgramFailed(f"could not start {shlex.join(argv)}: {exc}", 127, argv) \
                from None
        for name in pipes:          # the child has its ends: close ours, so EOF comes
            fd = child[name]
            opened.remove(fd)
            os.close(fd)
        tail: deque[str] = deque(maxlen=TAIL)
        try:
            if pipes:
                _pump(pipes, files, logs, tail)
            code = _reap(pid)
        except KeyboardInterrupt:       # the run is interrupted: SIGTERM the program and
            try:                        # wait for it (after the grace period the agent kills
                os.kill(pid, signal.SIGTERM)    # this executor's process group, the program
            except ProcessLookupError:          # with it)
                pass
            spawn.reap(pid)
            raise
        job_logs = files.make_all() if code != 0 else ()
    finally:
        files.close()
        for fd in opened:
            os.close(fd)
    if code != 0 and fail:
        paths = job_logs + tuple(streams[s][0] for s in ("stdout", "stderr") if s in streams)
        how = f"exit code {code}" if code >= 0 else f"killed by {_signame(-code)}"
        msg = [f"command {shlex.join(argv)} failed with {how} (in {cwd})"]
        if tail:
            msg.append("last stderr lines:\n  " + "\n  ".join(tail))
        elif "stderr" in streams:
            msg.append(f"stderr went to {streams['stderr'][0]}")
        if paths:
            msg.append("logs: " + ", ".join(paths))
        raise ProgramFailed("\n".join(msg), code, argv, paths)
    return code


def _reap(pid: int) -> int:
    """Wait for the program; keep its own peak resident set (``last_peak``, agent.usage)."""
    global last_peak
    code, peak = spawn.reap(pid, usage=True)
    last_peak = max(last_peak, peak)
    return code


_WRITE = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC


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


def _pump(pipes: dict[str, int], files: _JobFiles, logs: list[LineWire],
          tail: deque[str]) -> None:
    """Read the program's captured streams to their ends: lines to ``logs``, bytes to files."""
    poll = select.poll()
    what: dict[int, tuple[str, str]] = {}
    partial: dict[str, bytes] = {}
    for name, fd in pipes.items():
        poll.register(fd, select.POLLIN)
        what[fd] = (name, "STDOUT" if name == "stdout" else "STDERR")
        partial[name] = b""
    dropped = 0
    try:
        while what:
            for fd, _ in poll.poll():
                name, level = what[fd]
                chunk = os.read(fd, 65536)
                if not chunk:
                    poll.unregister(fd)
                    del what[fd]
                    os.close(fd)
                    lines = [partial[name]] if partial[name] else []
                else:
                    files.write(name, chunk)
                    lines = (partial[name] + chunk).split(b"\n")
                    partial[name] = lines.pop()
                if not lines:
                    continue
                t = time.time()
                for raw in lines:
                    text, lvl = _decode(raw.rstrip(b"\r"), level)
                    if name == "stderr":
                        tail.append(text)
                    if len(logs) < LOG_CAP:
                        logs.append((t, lvl, text))
                    else:
                        dropped += 1
    finally:
        for fd in what:
            os.close(fd)
    if dropped:
        logs.append((time.time(), "RAW", f"[taskflow] {dropped} more program output lines "
                                         f"dropped (cap {LOG_CAP} lines per task)"))


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
