"""The journal writer's CPU per task, from frames recorded in a real run and replayed.

``record`` runs a workload in this process with a 2-worker runtime and keeps every
frame the master sends to the journal's writer process (``taskflow.journal.child``),
with the time it was sent, and prints the CPU time the writer process used in the run
(``--repeat 0``: only that). ``replay`` feeds them, frame by frame, to the writer's own
code (``child.load_plain`` and ``JournalDB.write``, loaded as the writer process loads
them) in this process, with the writer's clock set to each frame's send time (so rows
wait in memory and go in whole as they did in the run: ``JournalDB.HOLD``), and prints
the CPU time per task (user + system, ``time.process_time``), medians of ``--repeat``.
The machine's load moves CPU time much less than it moves a run's throughput; the
workload runs once.

Workloads: ``noop`` (N no-op tasks returning their int argument, what A runs),
``programs`` (N ``true`` programs, what P runs: their rows carry an exit code) and
``mixed`` (no-ops, tasks reading and writing files, ``true``/``false`` programs and
failing tasks).

    python benchmarks/journal_replay.py [--tasks 100000] [--workload noop|programs|mixed]
                                        [--repeat 5]
                                        [--keep DIR]
"""
from __future__ import annotations

import argparse
import os
import statistics
import struct
import sys
import tempfile
import threading
import time
from typing import Any, Iterator

import taskflow

_HEAD = struct.Struct(">dI")    # (time sent, body length)


def record(workload: str, n: int, root: str, frames: str) -> str:
    """Run ``workload`` in a runtime under ``root``; its frames into ``frames``; the run's
    journal path."""
    from taskflow.journal import child

    out = open(frames, "wb")
    original = child.send_body

    def tee(proc: Any, body: bytes) -> None:
        out.write(_HEAD.pack(time.time(), len(body)))
        out.write(body)
        original(proc, body)

    original_finish = child.finish
    used: list[float] = []

    def finish(proc: Any, end: tuple[Any, ...]) -> int:
        """child.finish, reaping the writer with wait4 to read its CPU time."""
        try:
            child.send(proc, ("close", end))
            proc.stdin.close()
        except (RuntimeError, OSError):
            pass
        _, status, ru = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        used.append(ru.ru_utime + ru.ru_stime)
        reaped.set()
        return proc.returncode or 0

    original_status = child.read_status
    reaped = threading.Event()

    def read_status(proc: Any) -> Iterator[str]:
        """child.read_status; at its end, waits until finish() reaped the writer (the
        watcher's proc.wait() would reap it first)."""
        yield from original_status(proc)
        reaped.wait(120)

    child.send_body = tee       # (send() and JournalWriter.on_events look it up each call)
    child.finish = finish
    child.read_status = read_status
    try:
        with taskflow.Runtime(workers=2, run_dir=root, echo_logs=False) as rt:
            run(workload, n, root)
            path = rt.journal.path if rt.journal is not None else ""
    finally:
        child.send_body = original
        child.finish = original_finish
        child.read_status = original_status
        out.close()
    if used:
        print(f"live: the writer process used {used[0]:.3f} s of CPU, "
              f"{used[0] / n * 1e6:.2f} us per task (start-up included)", flush=True)
    return path


def run(workload: str, n: int, root: str) -> None:
    """``n`` tasks of ``workload`` (see the module's docstring), waited for."""
    if workload == "noop":
        taskflow.wait_on([noop(i) for i in range(n)])
        return
    if workload == "programs":
        taskflow.wait_on([ok_program() for _ in range(n)])
        return
    files = os.path.join(root, "files")
    os.makedirs(files, exist_ok=True)
    futs: list[Any] = []
    for i in range(n):
        k = i % 10
        if k == 0:
            src = os.path.join(files, f"in{i}.txt")
            with open(src, "w") as f:
                f.write(f"line {i}\n")
            futs.append(copy(src, os.path.join(files, f"out{i}.txt")))
        elif k == 1:
            futs.append(ok_program())
        elif k == 2 and i % 100 == 2:
            futs.append(bad_program())
        elif k == 3 and i % 50 == 3:
            futs.append(fails(i))
        elif k == 4:
            futs.append(talk(i, [i] * 3, name=f"n{i}"))
        else:
            futs.append(noop(i))
    for fut in futs:
        try:
            taskflow.wait_on(fut)
        except taskflow.TaskflowError:
            pass


@taskflow.task(returns=int)
def noop(x: int) -> int:
    return x


@taskflow.task(src=taskflow.FILE_IN, dst=taskflow.FILE_OUT)
def copy(src: str, dst: str) -> None:
    with open(src) as a, open(dst, "w") as b:
        b.write(a.read())


@taskflow.binary(binary="true")
@taskflow.task(returns=int)
def ok_program() -> None: ...


@taskflow.binary(binary="false")
@taskflow.task(returns=int, on_failure="IGNORE")
def bad_program() -> None: ...


@taskflow.task(returns=int, on_failure="IGNORE")
def fails(x: int) -> int:
    raise ValueError(f"task {x} fails on purpose")


@taskflow.task(returns=int)
def talk(x: int, xs: list[int], name: str = "") -> int:
    print(f"{name}: {x}")
    return x


class _Clock:
    """The writer's ``time`` module with ``time()`` at a frame's send time."""

    now = 0.0

    def time(self) -> float:
        return self.now

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def replay(frames: str, db_path: str) -> tuple[float, int]:
    """CPU seconds to write ``frames`` into a fresh journal at ``db_path``; task rows."""
    from taskflow.journal import child
    JournalDB = child._load_writer()
    writer_mod = sys.modules["_taskflow_journal.writer"]
    clock = _Clock()
    writer_mod.time = clock     # type: ignore[attr-defined]
    with open(frames, "rb") as f:
        data = f.read()
    bodies: list[tuple[float, bytes]] = []
    i = 0
    while i < len(data):
        t, size = _HEAD.unpack_from(data, i)
        i += _HEAD.size
        bodies.append((t, data[i:i + size]))
        i += size
    import gc
    gc.collect()
    gc.disable()            # as the writer process does (child.main)
    cpu0 = time.process_time()
    db = None
    for t, body in bodies:
        clock.now = t
        kind, payload = child.load_plain(body)
        if kind == "open":
            _, row, by_digest = payload
            db = JournalDB(db_path, row, by_digest)
        elif kind == "events":
            assert db is not None
            db.write(payload)
    assert db is not None
    db.close_run(bodies[-1][0], "finished", None, {})   # (a fixed end: journals compare)
    cpu = time.process_time() - cpu0
    gc.enable()
    import sqlite3
    con = sqlite3.connect(db_path)
    (rows,) = con.execute("SELECT COUNT(*) FROM task_rows").fetchone()
    con.close()
    return cpu, rows


def compare(a: str, b: str) -> list[str]:
    """The differences between two journals, table by table, row for row (rowid order);
    none: they hold the same rows."""
    import sqlite3
    out = []
    ca, cb = sqlite3.connect(a), sqlite3.connect(b)
    q = "SELECT name, sql FROM sqlite_master WHERE type IN ('table', 'index', 'view') " \
        "ORDER BY name"
    if ca.execute(q).fetchall() != cb.execute(q).fetchall():
        out.append("the schemas differ")
    for (name,) in ca.execute("SELECT name FROM sqlite_master WHERE type='table' "
                              "ORDER BY name"):
        ra = ca.execute(f"SELECT rowid, * FROM {name} ORDER BY rowid").fetchall()
        rb = cb.execute(f"SELECT rowid, * FROM {name} ORDER BY rowid").fetchall()
        if ra != rb:
            diff = next((x, y) for x, y in zip(ra + [None] * len(rb), rb + [None] * len(ra))
                        if x != y)
            out.append(f"{name}: {len(ra)} rows / {len(rb)}; first difference {diff}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=100_000)
    ap.add_argument("--workload", default="noop", choices=("noop", "programs", "mixed"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--frames", default=None, help="replay these recorded frames (no run)")
    ap.add_argument("--keep", default=None, help="keep the recorded frames and journals here")
    ap.add_argument("--compare", default=None, metavar="JOURNAL",
                    help="compare each replay's journal, every table row for row, with this "
                         "one (written from the same frames by another version)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = a.keep or tmp
        os.makedirs(where, exist_ok=True)
        frames = a.frames
        if frames is None:
            frames = os.path.join(where, f"{a.workload}.frames")
            path = record(a.workload, a.tasks, os.path.join(where, "run"), frames)
            print(f"recorded {os.path.getsize(frames) / 2**20:.1f} MiB of frames "
                  f"({path})", flush=True)
        runs = []
        for r in range(a.repeat):
            db = os.path.join(where, f"replay{r}.db")
            for suffix in ("", "-wal", "-shm"):
                if os.path.exists(db + suffix):
                    os.unlink(db + suffix)
            cpu, rows = replay(frames, db)
            runs.append(cpu / rows * 1e6)
            print(f"replay {r}: {cpu:.3f} s CPU, {rows:,} task rows, {runs[-1]:.2f} us/task",
                  flush=True)
            if a.compare:
                diffs = compare(a.compare, db)
                print("  same rows in every table as " + a.compare if not diffs else
                      "  DIFFERENT from " + a.compare + ":\n  " + "\n  ".join(diffs))
        if runs:
            print(f"median {statistics.median(runs):.2f} us CPU per task (min {min(runs):.2f})")


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    main()
