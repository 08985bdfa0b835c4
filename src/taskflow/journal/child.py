"""The journal's writer process: reads pickled batches on stdin, writes SQLite.

Frames are a 4-byte big-endian length and a pickle: ``("open", (path,
row, by_digest))``, ``("events", [...])`` then ``("close", (t_end, state, reason,
counts))``. At end of input without a close (the master died) it commits what
it has and leaves the run "running", which readers show as interrupted.

The writer takes plain data only (journal/wire.py reduces the program's
objects to their repr): its unpickler loads no class but the few builtins and
:class:`.text.Shown` the reduced forms name (:data:`PLAIN_GLOBALS`), and says
any other as a failed write instead of dying on a module it cannot import.

A write that fails is said on stdout, the status pipe the master watches, as
one line ``failed <why>`` (journal/failure.py); the writer then keeps nothing
more but the run's end (its state and reason, if the database takes them),
and exits with status 3.
"""
from __future__ import annotations

import io
import os
import pickle
import struct
import subprocess
import sys
from typing import Any, Iterator

_LEN = struct.Struct(">I")
# the only globals a delivery may name (journal/wire.py: what its reduced forms are made of)
PLAIN_GLOBALS = frozenset({("taskflow.journal.text", "Shown"), *(
    ("builtins", name) for name in ("tuple", "list", "dict", "set", "frozenset", "str", "bytes",
                                    "complex", "int", "float"))})


class PlainUnpickler(pickle.Unpickler):
    """Loads a delivery; refuses, by name, any class but :data:`PLAIN_GLOBALS`."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in PLAIN_GLOBALS:
            raise pickle.UnpicklingError(
                f"a delivery to the journal holds an object of {module}.{name}: the journal "
                f"takes plain data only (taskflow.journal.wire reduces the program's objects to "
                f"their repr; this one slipped through: a defect of taskflow, please report it)")
        return super().find_class(module, name)


def load_plain(body: bytes) -> Any:
    return PlainUnpickler(io.BytesIO(body)).load()


def spawn(path: str, row: tuple[Any, ...], by_digest: int | None) -> subprocess.Popen[bytes]:
    """Start the writer for ``path``; the run's row goes first, with the size over which
    a value is kept by digest (taskflow.graph.recorded.BY_DIGEST: this process does not
    load the package)."""
    # Run this file as a script in isolated mode: the child loads only this folder (stdlib
    # imports), not the taskflow package, so it starts in a few tens of milliseconds.
    # No preexec_fn: it makes subprocess fork the whole master in Python (~20 ms of the
    # run's start-up); the writer lowers its own priority first thing (main()).
    from ..context import PYTHON     # (here: run as a script, this file loads no taskflow)
    proc = subprocess.Popen([PYTHON, "-I", os.path.abspath(__file__)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True,
                            start_new_session=True)
    assert proc.stdin is not None       # stdin=PIPE
    try:                  # a 1 MiB pipe: a batch goes in one write, not in 64 KiB hand-offs
        import fcntl
        fcntl.fcntl(proc.stdin.fileno(), getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)
    except (OSError, ImportError, ValueError):
        pass
    send(proc, ("open", (path, row, by_digest)))
    return proc


NICE = int(os.environ.get("TASKFLOW_JOURNAL_NICE", "10"))


def _lower_priority() -> None:  # pragma: no cover - runs in the writer process
    """The writer yields the CPU to tasks and to the master (it catches up when idle)."""
    try:
        os.nice(NICE)
    except OSError:
        pass


def send(proc: subprocess.Popen[bytes], msg: Any) -> None:
    send_body(proc, pickle.dumps(msg, pickle.HIGHEST_PROTOCOL))


def send_body(proc: subprocess.Popen[bytes], body: bytes) -> None:
    """One frame whose pickle is made already (:mod:`taskflow.journal.wire`)."""
    assert proc.stdin is not None       # made by spawn(), with stdin=PIPE
    try:
        proc.stdin.write(_LEN.pack(len(body)))
        proc.stdin.write(body)
        proc.stdin.flush()
    except (BrokenPipeError, OSError, ValueError) as exc:
        raise RuntimeError(f"the journal writer process is gone (exit code {proc.poll()})") \
            from exc


def read_status(proc: subprocess.Popen[bytes]) -> Iterator[str]:
    """The writer's failures, one message each, until it ends (blocks: a watcher thread)."""
    assert proc.stdout is not None      # made by spawn(), with stdout=PIPE
    for line in proc.stdout:
        text = line.decode("utf-8", "replace").rstrip("\n")
        if text.startswith("failed "):
            yield text[len("failed "):]


def finish(proc: subprocess.Popen[bytes], end: tuple[Any, ...]) -> int:
    """Send the run's end and wait for the writer; its exit status (0: all written)."""
    from .failure import LOCK_WAIT      # (the master's side: a module of the package here)
    timeout = 60.0 + LOCK_WAIT          # (its last write may wait for a lock)
    assert proc.stdin is not None       # made by spawn(), with stdin=PIPE
    try:
        send(proc, ("close", end))
        proc.stdin.close()
    except (RuntimeError, OSError):
        pass
    from ..procwait import wait_exit    # (woken by its exit, not a poll: procwait.py)
    try:
        wait_exit(proc, timeout)
    except subprocess.TimeoutExpired:
        print("taskflow: the journal writer did not finish; killing it", file=sys.stderr)
        proc.kill()
        proc.wait()
    return proc.returncode or 0


def _read(f: Any, n: int) -> bytes | None:
    data = f.read(n)
    return data if data is not None and len(data) == n else None


def _say(message: str) -> None:  # pragma: no cover - runs in the writer process
    sys.stdout.write("failed " + " ".join(message.split()) + "\n")
    sys.stdout.flush()


def _load_writer() -> Any:
    """``writer.JournalDB`` with this folder loaded as a package of its own."""
    import importlib.util
    here = os.path.dirname(os.path.abspath(__file__))
    spec = importlib.util.spec_from_file_location("_taskflow_journal",
                                                  os.path.join(here, "__init__.py"),
                                                  submodule_search_locations=[here])
    assert spec is not None and spec.loader is not None     # a file that exists
    pkg = importlib.util.module_from_spec(spec)
    sys.modules["_taskflow_journal"] = pkg
    spec.loader.exec_module(pkg)
    import importlib
    JournalDB = importlib.import_module("_taskflow_journal.writer").JournalDB
    # (a delivery names taskflow.journal.text.Shown, as the master knows it: this copy)
    sys.modules["taskflow.journal.text"] = sys.modules["_taskflow_journal.text"]
    return JournalDB


def main() -> None:
    _lower_priority()
    import gc
    gc.disable()        # batches of plain tuples, no cycles: collections would only cost CPU
    JournalDB = _load_writer()
    f = sys.stdin.buffer
    db = None
    failed = False
    while True:
        head = _read(f, 4)
        if head is None:
            break
        body = _read(f, _LEN.unpack(head)[0])
        if body is None:
            break
        kind = None
        try:
            kind, payload = load_plain(body)
            if kind == "open":
                db = JournalDB(*payload)
            elif kind == "events" and db is not None and not failed:
                db.write(payload)
            elif kind == "close":
                if db is not None and failed:
                    t_end, _, reason, _ = payload
                    db.close_failed(t_end, reason)
                elif db is not None:
                    db.close_run(*payload)
                sys.exit(3 if failed else 0)
        except Exception as exc:  # noqa: BLE001 - said on the status pipe: the run fails
            _say(str(exc) or repr(exc))
            failed = True
            if kind == "close":
                sys.exit(3)
    if db is not None:
        db.db.close()


if __name__ == "__main__":
    main()
