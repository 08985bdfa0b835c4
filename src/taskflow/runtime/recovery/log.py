"""What a run keeps of every finished task so that a later run can resume it: the writer.

Runs are resumable by default (:data:`RESUMABLE`; ``--no-resumable``,
``Runtime(resumable=False)``). ``<run dir>/resume.log`` is append-only: a
record per finished task, written by the loop thread *before* the task's
result is acted on (its futures finished, its successors released, the
program told): a master killed at any moment (SIGKILL, an OOM kill, a
walltime) redoes no task whose completion it had acted on. Records are
written with one ``write`` per loop round into the page cache (past :data:`JOIN_MAX`
bytes of values, a ``writev`` of them as they are): they survive
the death of the process; a crash of the machine itself can lose what the
OS had not yet written back (Linux: up to ~30 s).

The file starts with :data:`~.frames.MAGIC` (its version), then a frame per
write (:mod:`.frames`: a head with the lengths and checksums, a pickled header,
the values' bytes in record order). The header is ``(functions, records)``:
``functions`` are the task functions first named in this frame, ``(number,
name, code digest)``; records are tuples, by their first field:

``("k", tid, key, name, ordinal, parts, outputs, dids)``
    a task with its key (graph/keys.py): ``outputs`` says, per output in
    order, ``("v", n, crc)`` a value of n bytes (in the frame) and their
    CRC-32, ``("V", n, crc)`` one with large buffers (a
    :class:`~taskflow.wire.messages.Packed`, pickled in-band), ``("f", path)``
    a file or directory version (kept in the run's data directory) or
    ``("h",)`` a value that stayed on its node; ``dids`` are its outputs'
    data ids.
``(function, ordinal, argv, n, crc)`` (a number first)
    a *plain* call (scalar positional arguments, no options) whose key was
    not computed (graph/keys.py): the reader computes it from the function's
    code digest and ``argv``; its value is n bytes whose CRC-32 is ``crc``
    (or, four fields, ``n`` is a ``("V", n, crc)`` as above). Nearly every
    short task ends as one of these: a small tuple, pickled with the frame's
    others in one call.
``("c", function, ordinal, key, inputs, output, did)``
    a call that read other tasks' values whose key waited (graph/keys.py: a
    chain's link): made by the bus thread, as a plain call's record is, with
    its key, ``inputs`` the ``(parameter, kind, digest)`` of its key's pieces
    (``--explain``), its one output as in a ``"k"`` record and its data id.
``("g", did, output)``
    a value that stayed on its node (``("h",)``) and was fetched later: it is
    kept too, so a resume restores it.
``("m", version, path, size, mtime_ns)``
    a file version was moved to the user's path at the end of the run (or at a
    barrier), as in a run that keeps no log: a resume takes it from there while
    its size and modification time are the same (the run's directory does not
    keep a second copy of every output).

``("o", cwd, argv)``
    the run's origin, first in the log: where and how it was started (JSON of
    its ``sys.argv``), as its journal says it (``taskflow run --resume`` finds
    the run by it when the journal cannot be read).

A truncated last frame (the master died while writing it) is ignored; a
damaged frame or value is never restored: the damage is said and the calls it
held run again (:mod:`.restore`, the reader). Checksums cost the write path a
CRC-32 of each value (``zlib.crc32``, several GB/s). A write that
fails (a full disk) fails the run loudly (:class:`~taskflow.errors.RecordFailed`).
"""
from __future__ import annotations

import io
import json
import os
import pickle
import sys
import threading
import time
from typing import TYPE_CHECKING, Any, Union, cast
from zlib import crc32

from ...context import private_file
from ...errors import RecordFailed
from ...wire.messages import Packed
from .frames import MAGIC, head

from ...graph.keys import KeyUnknown

if TYPE_CHECKING:
    from ...graph.keys import Keys, Waited
    from ...graph.task import Task

LOG_NAME = "resume.log"
# Whether a run keeps a resume log unless told (docs/guide/resume.md: what it costs)
RESUMABLE = True
# what a frame is written from: bytes, or a view of a large value's own buffer
Chunk = Union[bytes, memoryview, pickle.PickleBuffer]
Output = tuple[Any, ...]          # ("v", n, crc) | ("V", n, crc) | ("f", path) | ("h",)
RecordWire = tuple[Any, ...]      # one of the records above
# bytes of a value from which it is written from where it is, not joined with the frame's
# others: copying 200 values of 1 MB twice (join, then head + header + body) cost the
# bus thread, holding the interpreter lock, more than writing them
APART = 64 * 1024
JOIN_MAX = 1 << 20      # values of a frame up to this many bytes are joined into one write
IOV_MAX = min(1024, os.sysconf("SC_IOV_MAX")) if hasattr(os, "sysconf") else 16


class ResumeLog:
    """The writer: append records, one write (or writev) per batch (any thread, under
    its lock).

    By default (no policy) every batch is written before its tasks' results
    are acted on, so a master killed at any moment redoes no task it had acted
    on. A COMPSs-style checkpoint policy (``tasks`` N, ``seconds`` T) keeps
    records in memory and writes them when N have gathered or T seconds have
    passed (and at the end): fewer writes, and a killed master may redo up to
    that many finished tasks.
    """

    def __init__(self, path: str, every_tasks: int = 0, every_seconds: float = 0.0,
                 keys: Keys | None = None) -> None:
        self.path = path
        self._lock = threading.Lock()
        self.keys = keys                # the run's: its numbers of task functions
        self._named = 0                 # functions named in the log so far
        self.every_tasks = every_tasks
        self.every_seconds = every_seconds
        self.buffered = every_tasks > 0 or every_seconds > 0
        self._records: list[RecordWire] = []
        self._payloads: list[Chunk] = []
        self._t_flush = time.monotonic()
        self.pending = False        # records wait in memory (a policy is set)
        self.failed: str | None = None      # why a write failed (nothing is written after)
        try:
            private_file(path)
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND)
            if os.fstat(self._fd).st_size == 0:
                origin = ("o", os.getcwd(), json.dumps(sys.argv))
                _write_all(self._fd, [MAGIC, *self.frame([origin], [])])
        except OSError as exc:
            from ...journal.failure import describe
            raise RecordFailed(f"{describe('resume log', path, exc)} (give another "
                               f"--run-dir, or --no-resumable for a run without one)") from None

    def frame(self, records: list[RecordWire], payloads: list[Chunk]) -> list[Chunk]:
        """One frame of ``records`` whose values are ``payloads``, in order, as the parts
        to write one after the other: a large value's buffers are written from where they
        are (a 64 MiB array fetched to the master is not copied to be logged)."""
        functions: list[tuple[int, str, bytes]] = []
        keys = self.keys
        if keys is not None and len(keys.specs) > self._named:
            functions = [(no, spec.name, keys.code(spec))
                         for no, spec in enumerate(keys.specs[self._named:], self._named)]
            self._named = len(keys.specs)
        buf = io.BytesIO()
        pickler = pickle.Pickler(buf, 4)
        pickler.fast = True         # no memo: records share nothing, and it costs a third
        pickler.dump((functions, records))
        header = buf.getvalue()
        if all(type(p) is bytes and len(p) < APART for p in payloads):  # the common case
            values = cast("list[bytes]", payloads)
            size = sum(map(len, values))
            if size < JOIN_MAX:     # one buffer, one write
                return [b"".join([head(header, size), header, *values])]
            # (values of 10 KB from a round of 2,000 tasks: 20 MB copied once more, into
            # fresh pages, cost more than the write itself; writev takes them as they are)
            return [head(header, size) + header, *payloads]
        parts: list[Chunk] = []
        small: list[bytes] = []
        size = 0
        for p in payloads:
            if type(p) is bytes and len(p) < APART:
                small.append(p)
                size += len(p)
                continue
            if small:
                parts.append(b"".join(small))
                small = []
            parts.append(p)
            size += memoryview(p).nbytes
        if small:
            parts.append(b"".join(small))
        return [head(header, size) + header, *parts]

    def add(self, records: list[RecordWire], payloads: list[Chunk]) -> None:
        """Records of finished tasks: written now, or kept until the policy says (then a
        value's buffers are copied: the program may change its array meanwhile)."""
        if not self.buffered:
            with self._lock:
                self._write_locked(records, payloads)
            return
        if not all(type(p) is bytes for p in payloads):
            payloads = [p if type(p) is bytes else bytes(memoryview(p)) for p in payloads]
        with self._lock:
            self._records.extend(records)
            self._payloads.extend(payloads)
            self.pending = True
            if (self.every_tasks and len(self._records) >= self.every_tasks) or \
                    (self.every_seconds and
                     time.monotonic() - self._t_flush >= self.every_seconds):
                self._flush_locked()

    def ended(self, tasks: list[Task]) -> None:
        """From the bus thread, at each delivery: the tasks that ended well since the last.
        A plain call whose key waited (graph/keys.py) is kept as itself, and its future
        keeps its record, from which its key is made if a later call reads it; one whose
        value stayed on its node gets its key now (a later fetch of the value names it).
        A call with inputs whose key waited gets its key now, kept in a ``"c"`` record
        (the tasks it read came before it). Tasks with a key were kept by the loop thread
        already."""
        keys = self.keys
        if keys is None:
            return
        records: list[RecordWire] = []
        payloads: list[Chunk] = []
        keep, keep_value = records.append, payloads.append
        number = keys.number
        last: Any = None
        no = 0
        for t in tasks:                 # (the bus thread's hot loop: one pass, short)
            if t.key is not None or not t.ordinal:
                continue
            outs = t.outputs
            if not outs:
                continue
            fut = outs[0]
            p = fut._payload
            if t.nest is not None and t.nest.left_open():   # (a task under it runs on)
                _key_only(keys, t, fut)
                continue
            if t.refs is not None or t.key_parts is not None:   # with inputs: its key now
                _waited(keys, t, fut, p, records, payloads)
                continue
            if type(p) is bytes:
                spec = t.spec
                if spec is not last:
                    last, no = spec, number(spec)
                argv = t.argv
                keep((no, t.ordinal, argv, len(p), crc32(p)))
                fut.set_key((no, argv))     # what its key is made of, if a later call reads it
                keep_value(p)
                continue
            if type(p) is Packed:           # large buffers out of band: kept in-band here
                no_p, argv = number(t.spec), t.argv
                keep((no_p, t.ordinal, argv, _describe(p, payloads)))
                fut.set_key((no_p, argv))
            elif fut._holders:              # stayed on its node: keyed, for a later fetch
                keep(("k", t.id, keys.deferred(t), t.spec.name, t.ordinal,
                      keys.parts(t.spec), (("h",),), (fut._did,)))
            else:                           # (no value: nothing to restore)
                keys.deferred(t)            # (its key, not the task, for a later reader)
        if records:
            self.add(records, payloads)

    @staticmethod
    def at_once(t: Task) -> bool:
        """Whether :meth:`ended` takes ``t`` at the bus's delivery it comes in, not after
        the burst (:meth:`taskflow.runtime.bus.EventBus.watch_ended`): all but a call whose
        key waited (plain or with inputs) whose value is at the master. A value that
        stayed on its node costs one tuple here, and the task held until the burst is
        over would keep its future, and so the value on the node, alive all that while
        (20,000 values of 1 MiB held ~700 MB in the agent so); a call with a key, or
        without a value, costs nothing."""
        outs = t.outputs            # (read once: the loop thread may empty it, Keys.held)
        if t.key is not None or not t.ordinal or not outs:
            return True
        p = outs[0]._payload
        return type(p) is not bytes and type(p) is not Packed

    def moved(self, version: str, path: str) -> None:
        """A file version was moved to the user's ``path`` at the end (or a barrier): a
        resume takes it there while it is as it was (its size and modification time)."""
        self.moved_all([(version, path)])

    def moved_all(self, moves: list[tuple[str, str]]) -> None:
        """:meth:`moved` for each ``(version, path)``, the records in one frame (a barrier
        after 2,000 programs wrote a file each wrote 2,000 frames)."""
        records: list[RecordWire] = []
        for version, path in moves:
            try:
                st = os.stat(path)
            except OSError:
                continue
            records.append(("m", version, path, st.st_size, st.st_mtime_ns))
        if records:
            self.add(records, [])

    def fetched(self, did: int, payload: Any) -> None:
        """A value that stayed on its node came to the master: keep it too."""
        out: list[Chunk] = []
        desc = _describe(payload, out)
        if desc is not None:
            self.add([("g", did, desc)], out)

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
            self._write_locked(records, payloads)

    def _write_locked(self, records: list[RecordWire], payloads: list[Chunk]) -> None:
        if self.failed is not None:
            return
        try:
            _write_all(self._fd, self.frame(records, payloads))
        except OSError as exc:
            from ...journal.failure import describe
            self.failed = describe("resume log", self.path, exc)
            raise RecordFailed(self.failed) from None

    def close(self) -> None:
        with self._lock:
            try:
                self._flush_locked()
            except RecordFailed:
                pass                # (said when it happened)
            try:
                os.close(self._fd)
            except OSError:
                pass


def _key_only(keys: Keys, t: Task, fut: Any) -> None:
    """:meth:`ResumeLog.ended` for a task kept out of the log (a task under it runs on:
    ``NestRecord.left_open``): its key all the same, for the calls that read it."""
    if t.refs is None and t.key_parts is None:
        keys.deferred(t)
    else:
        fut.set_key(_late_key(keys, t)[0])


def _late_key(keys: Keys, t: Task) -> Waited:
    """The key (and its parts) of a call with inputs whose key waited, made now (from the
    bus thread: the tasks it read were kept before it)."""
    try:
        return keys.late(t, settle=False)
    except KeyUnknown:          # (never so far) it runs again on a resume, and its readers
        return keys.unknowable(t)


def _waited(keys: Keys, t: Task, fut: Any, p: Any, records: list[RecordWire],
            payloads: list[Chunk]) -> None:
    """:meth:`ResumeLog.ended` for a call with inputs whose key waited (graph/keys.py): its
    key made now (from the bus thread: the tasks it read were kept before it), its record
    a ``"c"`` one."""
    key, parts = _late_key(keys, t)
    fut.set_key(key)
    if type(p) is bytes:
        payloads.append(p)
        out: Output | None = ("v", len(p), crc32(p))
    elif type(p) is Packed:
        out = _describe(p, payloads)
    elif fut._holders:
        out = ("h",)
    else:
        return                  # (no value: nothing to restore)
    records.append(("c", keys.number(t.spec), t.ordinal, key, parts.inputs, out, fut._did))


def _write_all(fd: int, parts: list[Chunk]) -> None:
    """Write ``parts`` one after the other: :data:`IOV_MAX` of them per ``writev``."""
    views = [memoryview(part).cast("B") for part in parts]
    i = 0
    while i < len(views):
        batch = views[i:i + IOV_MAX]
        n = os.writev(fd, batch)
        for view in batch:          # what was written: whole parts, then part of one
            if n >= view.nbytes:
                n -= view.nbytes
                i += 1
                continue
            views[i] = view[n:]     # (a short write: the rest of that part, and on)
            break


class _Parts:
    """A pickler's file that keeps what it is given: a large buffer comes whole, as a
    view of the value's own memory, and is kept so, not copied."""

    __slots__ = ("chunks", "size")

    def __init__(self) -> None:
        self.chunks: list[Chunk] = []
        self.size = 0

    def write(self, data: Chunk) -> int:
        self.chunks.append(data)
        n = memoryview(data).nbytes
        self.size += n
        return n


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


def _describe(o: Any, payloads: list[Chunk]) -> Output | None:
    """An output's description in a record (its bytes appended to ``payloads``)."""
    if type(o) is bytes:
        payloads.append(o)
        return ("v", len(o), crc32(o))
    if type(o) is Packed:   # large buffers out of band: in-band here, in the parts they are
        parts = _Parts()
        pickle.Pickler(parts, 5).dump(o)
        payloads.extend(parts.chunks)
        crc = 0
        for c in parts.chunks:
            crc = crc32(c, crc)
        return ("V", parts.size, crc)
    return None


def completion_record(task: Task, outputs: list[Any],
                      payloads: list[Chunk]) -> RecordWire | None:
    """The record of a task that ended well whose key is known (None: it has none, a
    plain call's is kept by :meth:`ResumeLog.ended`); its values are appended to
    ``payloads``. Written by the loop thread before the result is acted on."""
    key = task.key
    if key is None or (task.nest is not None and task.nest.left_open()):
        return None         # (no key: kept by ResumeLog.ended; a task under it runs on)
    descs: list[Output] = []
    futs = task.all_outputs()
    for fut, o in zip(futs, outputs):
        d = _describe(o, payloads)
        if d is not None:
            descs.append(d)
        elif o is None:                     # a file or directory the task wrote
            descs.append(("f", fut._path))
        else:                               # Held: stayed on its node
            descs.append(("h",))
    return ("k", task.id, key, task.spec.name, task.ordinal, task.key_parts, tuple(descs),
            tuple(f._did for f in futs))


def plain_descs(outputs: tuple[Output, ...]) -> tuple[Output, ...]:
    """A read record's outputs, ``(kind, n, offset, crc)`` for a value, as a record writes
    them (without where the values were)."""
    return tuple((o[0], o[1], o[3]) if o[0] in ("v", "V") else o for o in outputs)
