"""What a resumable run keeps of every finished task, and how a later run finds it.

``<run dir>/resume.log`` is append-only: a record per finished task, written by
the loop thread *before* the task's result is acted on (its futures finished,
its successors released, the program told): a master killed at any moment
(SIGKILL, an OOM kill, a walltime) redoes no task whose completion it had
acted on. A record is written with one ``write`` per loop round into the
page cache: it survives the death of the process; a crash of the machine
itself can lose what the OS had not yet written back (Linux: up to ~30 s).

The log is a sequence of frames, one per loop round: two big-endian lengths,
a pickled header (a list of records ``(key, name, ordinal, parts, outputs)``,
pickled together so that what they share, a function's code digest, is
written once) and the outputs' bytes in record order. ``outputs`` says, per
output of the task in order, ``("v", n)`` a value of n bytes (in the frame), ``("V", n)`` one with
large buffers (a :class:`~taskflow.wire.messages.Packed`, pickled in-band),
``("f", path)`` a file or directory version (kept in the run's data
directory) or ``("h",)`` a value that stayed on its node (not kept: the task
runs again). A truncated last frame (the master died while writing it) is
ignored.
"""
from __future__ import annotations

import os
import pickle
import struct
import threading
import time
from typing import Any, NamedTuple

from ..context import private_file
from ..graph.keys import KeyParts
from ..wire.messages import Packed

LOG_NAME = "resume.log"
_HEAD = struct.Struct(">II")
Output = tuple[Any, ...]          # ("v", n) | ("V", n) | ("f", path) | ("h",)
# one record in a frame's header: (key, name, ordinal, parts, outputs)
RecordWire = tuple[bytes, str, int, KeyParts, tuple[Output, ...]]


class Record(NamedTuple):
    key: bytes
    name: str
    ordinal: int                  # this call is the ordinal-th of its function in the run
    parts: KeyParts
    outputs: tuple[Output, ...]
    offset: int                   # where its values start in the log


class ResumeLog:
    """The writer: append records, one write per batch (any thread).

    By default (no policy) every batch is written before its tasks' results
    are acted on, so a master killed at any moment redoes no task it had acted
    on. A COMPSs-style checkpoint policy (``tasks`` N, ``seconds`` T) keeps
    records in memory and writes them when N have gathered or T seconds have
    passed (and at the end): fewer writes, and a killed master may redo up to
    that many finished tasks.
    """

    def __init__(self, path: str, every_tasks: int = 0, every_seconds: float = 0.0) -> None:
        private_file(path)
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        self._lock = threading.Lock()
        self.every_tasks = every_tasks
        self.every_seconds = every_seconds
        self.buffered = every_tasks > 0 or every_seconds > 0
        self._records: list[RecordWire] = []
        self._payloads: list[bytes] = []
        self._t_flush = time.monotonic()
        self.pending = False        # records wait in memory (a policy is set)

    @staticmethod
    def frame(records: list[RecordWire], payloads: list[bytes]) -> bytes:
        """One frame of ``records`` whose ``("v", n)`` outputs are ``payloads``, in order."""
        header = pickle.dumps(records, 4)
        body = b"".join(payloads)
        return _HEAD.pack(len(header), len(body)) + header + body

    def add(self, records: list[RecordWire], payloads: list[bytes]) -> None:
        """Records of finished tasks: written now, or kept until the policy says."""
        if not self.buffered:
            self._write(self.frame(records, payloads))
            return
        with self._lock:
            self._records.extend(records)
            self._payloads.extend(payloads)
            self.pending = True
            if (self.every_tasks and len(self._records) >= self.every_tasks) or \
                    (self.every_seconds and
                     time.monotonic() - self._t_flush >= self.every_seconds):
                self._flush_locked()

    def tick(self) -> None:
        """The loop's round: write records that have waited ``every_seconds``."""
        if self.every_seconds and time.monotonic() - self._t_flush >= self.every_seconds:
            with self._lock:
                self._flush_locked()

    def flush(self) -> None:
        with self._lock:
            self._flush_locked()

    def _flush_locked(self) -> None:
        self._t_flush = time.monotonic()
        if self._records:
            records, payloads = self._records, self._payloads
            self._records, self._payloads = [], []
            self.pending = False
            self._write_locked(self.frame(records, payloads))

    def _write(self, data: bytes) -> None:
        with self._lock:
            self._write_locked(data)

    def _write_locked(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            n = os.write(self._fd, view)
            view = view[n:]

    def close(self) -> None:
        with self._lock:
            try:
                self._flush_locked()
            except OSError:
                pass
            try:
                os.close(self._fd)
            except OSError:
                pass


def checkpoint_policy(text: str | None) -> tuple[int, float]:
    """``--checkpoint``: "tasks=N", "seconds=T" or both, comma-separated; None: each batch."""
    tasks, seconds = 0, 0.0
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        k, _, v = part.partition("=")
        try:
            if k == "tasks" and int(v) > 0:
                tasks = int(v)
                continue
            if k == "seconds" and float(v) > 0:
                seconds = float(v)
                continue
        except ValueError:
            pass
        raise ValueError(f"checkpoint policy {text!r}: give tasks=N (every N finished tasks) "
                         f"and/or seconds=T (every T seconds), e.g. tasks=1000,seconds=30")
    return tasks, seconds


class ResumeStore:
    """The reader: an earlier run's records, indexed by key and by (name, ordinal).

    Only the headers are held in memory; values are read from the log when a
    task is restored.
    """

    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir
        self.path = os.path.join(run_dir, LOG_NAME)
        self.by_key: dict[bytes, Record] = {}
        self.by_call: dict[tuple[str, int], Record] = {}
        if not os.path.exists(self.path):
            raise FileNotFoundError(f"{run_dir} has no {LOG_NAME}: that run was not resumable "
                                    f"(start it with taskflow run --resumable)")
        with open(self.path, "rb") as f:
            pos = 0
            while True:
                head = f.read(_HEAD.size)
                if len(head) < _HEAD.size:
                    break
                hlen, blen = _HEAD.unpack(head)
                raw = f.read(hlen)
                if len(raw) < hlen:
                    break
                start = pos + _HEAD.size + hlen
                if f.seek(blen, os.SEEK_CUR) > os.fstat(f.fileno()).st_size:
                    break                       # truncated by the master's death
                pos = start + blen
                try:
                    records = pickle.loads(raw)
                except Exception:  # noqa: BLE001 - a damaged tail: what came before counts
                    break
                for key, name, ordinal, parts, outputs in records:
                    rec = Record(key, name, ordinal, KeyParts(*parts), outputs, start)
                    start += sum(o[1] for o in outputs if o[0] in ("v", "V"))
                    self.by_key[key] = rec
                    self.by_call[(name, ordinal)] = rec

    def __len__(self) -> int:
        return len(self.by_key)

    def values(self, rec: Record) -> list[bytes | None]:
        """The bytes of each ``("v", n)`` output of ``rec`` (None for the others)."""
        out: list[bytes | None] = []
        with open(self.path, "rb") as f:
            f.seek(rec.offset)
            for o in rec.outputs:
                if o[0] == "v":
                    out.append(f.read(o[1]))
                elif o[0] == "V":                 # a Packed pickled (outcomes loads it)
                    out.append(f.read(o[1]))
                else:
                    out.append(None)
        return out


def explain(old: Record | None, parts: KeyParts, failed_before: bool) -> str:
    """Why a call whose key found no record runs again (one short phrase)."""
    if old is None:
        return "it failed in the earlier run" if failed_before else \
            "no earlier result (it did not finish)"
    if old.parts.code != parts.code:
        return "its code changed"
    before = {(n, k): d for n, k, d in old.parts.inputs}
    for name, kind, digest in parts.inputs:
        if before.get((name, kind)) != digest:
            if kind == "task":
                return f"an upstream task changed (parameter {name})"
            if kind == "file":
                return f"input file changed (parameter {name})"
            if kind == "path":
                return f"it writes another path (parameter {name})"
            return f"an argument changed (parameter {name})"
    if len(before) != len(parts.inputs):
        return "its inputs changed"
    return "an argument or option changed"


class Resumer:
    """In a resumed run: restore the calls an earlier run finished; say why others rerun."""

    def __init__(self, store: ResumeStore, failed: set[tuple[str, int]]) -> None:
        self.store = store
        self.failed = failed                       # (name, ordinal) of its failed calls
        self.reruns: dict[str, dict[str, int]] = {}   # name -> reason -> count
        self.restored = 0

    def find(self, key: bytes | None, name: str, ordinal: int,
             parts: KeyParts | None) -> tuple[Record | None, str]:
        """The record to restore from, or None and why the call runs again."""
        rec = self.store.by_key.get(key) if key is not None else None
        if rec is not None:
            if any(o[0] == "h" for o in rec.outputs):
                why = "its value stayed on a node and was not kept"
            elif any(o[0] == "f" and not os.path.exists(o[1]) for o in rec.outputs):
                why = "the file it wrote is gone from the earlier run's directory"
            else:
                return rec, ""
        else:
            why = explain(self.store.by_call.get((name, ordinal)), parts or KeyParts(b"", ()),
                          (name, ordinal) in self.failed)
        counts = self.reruns.setdefault(name, {})
        counts[why] = counts.get(why, 0) + 1
        return None, why

    def lines(self) -> list[str]:
        """One line per task name that ran again: how many, and why."""
        return rerun_lines(self.reruns)


def rerun_lines(reruns: dict[str, dict[str, int]]) -> list[str]:
    """``name: N ran again (why)``, one line per task name (``--explain``, ``taskflow explain``)."""
    out = []
    for name in sorted(reruns):
        reasons = reruns[name]
        total = sum(reasons.values())
        why = "; ".join(f"{n} {r}" if len(reasons) > 1 else r
                        for r, n in sorted(reasons.items(), key=lambda x: -x[1]))
        out.append(f"{name}: {total} ran again ({why})")
    return out


def failed_calls(run_dir: str) -> set[tuple[str, int]]:
    """(name, ordinal) of the calls that failed in an earlier run (from its journal)."""
    from ..journal.reader import Journal
    out: set[tuple[str, int]] = set()
    seen: dict[str, int] = {}
    try:
        with Journal(run_dir) as j:
            for t in sorted(j.tasks(), key=lambda t: t["id"]):
                n = seen[t["name"]] = seen.get(t["name"], 0) + 1
                if t["state"] in ("FAILED", "CANCELLED"):
                    out.add((t["name"], n))
    except Exception:  # noqa: BLE001 - no journal: reasons are vaguer, nothing else changes
        pass
    return out


def completion_record(task: Any, outputs: list[Any],
                      payloads: list[bytes]) -> RecordWire | None:
    """The record of a task that ended well (None when it has no key); its values are
    appended to ``payloads``."""
    key = task.key
    if key is None:
        return None
    if len(outputs) == 1 and not task.inouts:      # one output: the common case, short
        o = outputs[0]
        if type(o) is bytes:
            payloads.append(o)
            return key, task.spec.name, task.ordinal, task.key_parts, (("v", len(o)),)
    descs: list[Output] = []
    for fut, o in zip(task.all_outputs(), outputs):
        if type(o) is bytes:
            descs.append(("v", len(o)))
            payloads.append(o)
        elif type(o) is Packed:             # large buffers out of band: kept in-band here
            blob = pickle.dumps(o, 5)
            descs.append(("V", len(blob)))
            payloads.append(blob)
        elif o is None:                     # a file or directory the task wrote
            descs.append(("f", fut._path))
        else:                               # Held: stayed on its node
            descs.append(("h",))
    return key, task.spec.name, task.ordinal, task.key_parts, tuple(descs)
