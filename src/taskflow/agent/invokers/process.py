"""Running one external program (node side): streams, log capture, exit code.

The program's stdout and stderr, unless a stream parameter takes them, are
read line by line as they come: each line goes into the task's log list as
``(time, "STDOUT" | "STDERR", text)`` (``"RAW"`` for bytes that are not
UTF-8) and, byte for byte, into ``<log_dir>/job<task id>.out`` / ``.err`` so
a failed task's error can say where to look.
"""
from __future__ import annotations

import ctypes
import os
import selectors
import shlex
import signal
import subprocess
import time
from collections import deque
from typing import IO, TYPE_CHECKING

from ...errors import ProgramFailed

if TYPE_CHECKING:
    from ...wire.messages import LineWire

LOG_CAP = 10000       # lines kept in the task's log list (as the executor's cap)
last_peak = 0         # bytes: the largest peak resident set of a program waited for (agent.usage)
TAIL = 20             # stderr lines quoted in a failure


def _die_with_parent() -> None:  # pragma: no cover - runs in the child
    """If the executor is killed (time_out, cancel), the program gets SIGTERM."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def run(argv: list[str], cwd: str, env: dict[str, str], streams: dict[str, tuple[str, str]],
        logs: list[LineWire], log_base: str | None, fail: bool) -> int:
    """Run ``argv``; return its exit code (raise :class:`ProgramFailed` when ``fail``)."""
    opened: list[IO[bytes]] = []
    try:
        stdin: int | IO[bytes] = subprocess.DEVNULL
        if "stdin" in streams:
            stdin = open(streams["stdin"][0], "rb")
            opened.append(stdin)
        targets: dict[str, IO[bytes]] = {}
        for name in ("stdout", "stderr"):
            if name in streams:
                path, direction = streams[name]
                os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
                f = open(path, "ab" if direction == "INOUT" else "wb")
                opened.append(f)
                targets[name] = f
        files: dict[str, IO[bytes]] = {}
        if log_base:
            os.makedirs(os.path.dirname(log_base), exist_ok=True)
            for name, ext in (("stdout", ".out"), ("stderr", ".err")):
                if name not in targets:
                    files[name] = open(log_base + ext, "wb")
                    opened.append(files[name])
        try:
            proc = subprocess.Popen(
                argv, cwd=cwd, env=env, stdin=stdin, close_fds=True,
                stdout=targets.get("stdout", subprocess.PIPE),
                stderr=targets.get("stderr", subprocess.PIPE), preexec_fn=_die_with_parent)
        except OSError as exc:
            raise ProgramFailed(f"could not start {shlex.join(argv)}: {exc}", 127, argv) \
                from None
        tail: deque[str] = deque(maxlen=TAIL)
        try:
            _pump(proc, files, logs, tail)
            code = _wait(proc)
        except KeyboardInterrupt:       # the run is interrupted: SIGTERM the program and
            proc.terminate()            # wait for it (after the grace period the agent kills
            proc.wait()                 # this executor's process group, the program with it)
            raise
    finally:
        for fh in opened:
            fh.close()
    if code != 0 and fail:
        paths = tuple(f.name for f in files.values()) + \
            tuple(streams[s][0] for s in ("stdout", "stderr") if s in streams)
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


def _wait(proc: subprocess.Popen[bytes]) -> int:
    """Wait for the program; keep its own peak resident set (``last_peak``) from wait4."""
    global last_peak
    try:
        _, status, ru = os.wait4(proc.pid, 0)
    except ChildProcessError:        # reaped already (should not happen): no usage
        return proc.wait()
    proc.returncode = code = os.waitstatus_to_exitcode(status)
    last_peak = max(last_peak, int(ru.ru_maxrss) * 1024)    # KiB on Linux
    return code


def _pump(proc: subprocess.Popen[bytes], files: dict[str, IO[bytes]], logs: list[LineWire],
          tail: deque[str]) -> None:
    sel = selectors.DefaultSelector()
    partial: dict[str, bytes] = {}
    for name, level in (("stdout", "STDOUT"), ("stderr", "STDERR")):
        pipe = getattr(proc, name)
        if pipe is not None:
            sel.register(pipe, selectors.EVENT_READ, (name, level))
            partial[name] = b""
    dropped = 0
    while sel.get_map():
        for key, _ in sel.select():
            name, level = key.data
            chunk = os.read(key.fd, 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                lines = [partial[name]] if partial[name] else []
            else:
                if name in files:
                    files[name].write(chunk)
                lines = (partial[name] + chunk).split(b"\n")
                partial[name] = lines.pop()
            t = time.time()
            for raw in lines:
                text, lvl = _decode(raw.rstrip(b"\r"), level)
                if name == "stderr":
                    tail.append(text)
                if len(logs) < LOG_CAP:
                    logs.append((t, lvl, text))
                else:
                    dropped += 1
    sel.close()
    if dropped:
        logs.append((time.time(), "RAW", f"[taskflow] {dropped} more program output lines "
                                         f"dropped (cap {LOG_CAP} lines per task)"))


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
