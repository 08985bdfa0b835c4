"""Resuming a run: an earlier run's resume log read, and its finished calls restored.

:class:`ResumeStore` reads the log :mod:`.log` writes (its format is
described there) into records indexed by key and by (name, ordinal); only
the headers are held in memory, values are read from the log when a task is
restored. :class:`Resumer` is the resumed run's side: it finds a call's
record, restores it (its values, its file versions, its futures done at
once) or says why the call runs again (:mod:`.reasons`).

A truncated last frame (the master died while writing it) is ignored. A log
that another version of taskflow wrote is said in one line and not read. A
damage (:mod:`.frames`: every frame and value carries a CRC-32) is never
restored: a damaged frame is said with its byte offset and what was used
(:attr:`ResumeStore.damaged`: the records before it, and those of the intact
frames after it, where reading went on); a damaged value is found when its
call would be restored (:class:`ValueDamaged`), said, and that call runs again.
"""
from __future__ import annotations

import logging
import os
import pickle
import time
from typing import TYPE_CHECKING, Any, Iterable, NamedTuple
from zlib import crc32

from ...graph.keys import KeyParts, file_paths, plain_key
from .frames import MAGIC, READS, Damage, Frame, frame_at, read_frames
from .log import LOG_NAME, Output, plain_descs
from .reasons import summary_lines, why_again

if TYPE_CHECKING:
    from ...future import Future
    from ...graph.task import Task
    from ..state import RunState
    from .adopt import Adoption
    from .log import ResumeLog

log = logging.getLogger(__name__)


class ValueDamaged(Exception):
    """A value of a record does not match its checksum (the message: where, one line)."""


class Record(NamedTuple):
    key: bytes
    name: str
    ordinal: int                  # this call is the ordinal-th of its function in the run
    parts: KeyParts
    outputs: tuple[Output, ...]   # ("v" | "V", n, offset in the log, crc) | ("f", path) | ("h",)


class ResumeStore:
    """An earlier run's records, indexed by key and by (name, ordinal)."""

    def __init__(self, run_dir: str) -> None:
        self.run_dir = run_dir
        self.path = os.path.join(run_dir, LOG_NAME)
        self.by_key: dict[bytes, Record] = {}
        self.by_call: dict[tuple[str, int], Record] = {}
        self.damaged: str | None = None         # where and why the log could not be read
        self.origin: tuple[str, str] | None = None  # (cwd, argv JSON) of the run that wrote it
        self.moved: dict[str, tuple[str, int, int]] = {}   # version -> (path, size, mtime)
        if not os.path.exists(self.path):
            raise FileNotFoundError(f"{run_dir} has no {LOG_NAME}: that run was not resumable "
                                    f"(started with --no-resumable): it kept no record to "
                                    f"resume from")
        self._specs: dict[int, tuple[str, bytes, KeyParts]] = {}
        self._held: dict[int, tuple[bytes, int]] = {}    # data id -> (key, output index)
        self._got: dict[int, Output] = {}       # fetched values of records not read yet
        with open(self.path, "rb") as f:
            self._read(f, os.fstat(f.fileno()).st_size)
        self._specs = {}
        self._held = {}
        self._got = {}

    def _read(self, f: Any, size: int) -> None:
        magic = f.read(len(MAGIC))
        if magic not in READS:
            if magic:
                self.damaged = (f"{self.path} is not a resume log this taskflow can read (an "
                                f"earlier version wrote it, or it is damaged): nothing is "
                                f"restored from it")
            return
        damages: list[Damage] = []
        used: list[int] = []            # records read before each damage
        skipped = 0                     # plain calls of a function named in a lost frame
        for frame in read_frames(f, size, damages):
            while len(used) < len(damages):
                used.append(len(self.by_key))
            try:
                functions, records = pickle.loads(frame.header)
                for no, name, code in functions:
                    self._specs[no] = (name, code, KeyParts(code, ()))
                start = frame.body
                for rec in records:
                    start, lost = self._add(rec, start)
                    skipped += lost
            except Exception as exc:  # noqa: BLE001 - checksums matched: written so by taskflow
                damages.append(Damage(frame.pos, f"{type(exc).__name__}: {exc}", frame.end))
                used.append(len(self.by_key))
        while len(used) < len(damages):
            used.append(len(self.by_key))
        if damages:
            self.damaged = _damage_text(self.path, damages, used, len(self.by_key), skipped)

    def _add(self, rec: tuple[Any, ...], start: int) -> tuple[int, int]:
        """One record of a frame whose values start at ``start``: where the next ones do,
        and 1 if it was not used (its function was named in a frame that was lost)."""
        tag = rec[0]
        if type(tag) is int:            # a plain call, kept as itself: its key now
            no, ordinal, argv, out, *crc = rec
            desc, start = _placed(("v", out, *crc) if type(out) is int else out, start)
            spec = self._specs.get(no)
            if spec is None:
                return start, 1
            name, code, parts = spec
            self._put(Record(plain_key(code, argv), name, ordinal, parts, (desc,)))
        elif tag == "k":
            _, _, key, name, ordinal, parts, outputs, dids = rec
            descs = []
            for i, o in enumerate(outputs):
                d, start = _placed(o, start)
                if o[0] == "h":         # fetched later (or before: kept by the bus thread)
                    d = self._got.pop(dids[i], d)
                    if d[0] == "h":
                        self._held[dids[i]] = (key, i)
                descs.append(d)
            self._put(Record(key, name, ordinal, KeyParts(*parts), tuple(descs)))
        elif tag == "c":              # a call with inputs whose key waited (log.py)
            _, no, ordinal, key, inputs, out, did = rec
            desc, start = _placed(out, start)
            spec = self._specs.get(no)
            if spec is None:
                return start, 1
            if desc[0] == "h":          # fetched later (or before)
                desc = self._got.pop(did, desc)
                if desc[0] == "h":
                    self._held[did] = (key, 0)
            name, code, _ = spec
            self._put(Record(key, name, ordinal, KeyParts(code, inputs), (desc,)))
        elif tag == "m":
            _, version, path, size, mtime = rec
            self.moved[version] = (path, size, mtime)
        elif tag == "g":
            _, did, out = rec
            d, start = _placed(out, start)
            where = self._held.pop(did, None)
            old = self.by_key.get(where[0]) if where is not None else None
            if where is not None and old is not None:
                outs = list(old.outputs)
                outs[where[1]] = d
                self._put(old._replace(outputs=tuple(outs)))
            else:
                self._got[did] = d
        elif tag == "o":
            _, cwd, argv = rec
            self.origin = (cwd, argv)
        else:
            raise ValueError(f"a record of an unknown kind {tag!r}")
        return start, 0

    def _put(self, rec: Record) -> None:
        self.by_key[rec.key] = rec
        self.by_call[(rec.name, rec.ordinal)] = rec

    def __len__(self) -> int:
        return len(self.by_key)

    def values(self, rec: Record) -> list[bytes | None]:
        """The bytes of each value output of ``rec`` (None for the others); raises
        :class:`ValueDamaged` when one does not match its checksum."""
        out: list[bytes | None] = []
        with open(self.path, "rb") as f:
            for o in rec.outputs:
                if o[0] in ("v", "V"):      # "V": a Packed pickled (outcomes loads it)
                    kind, n, offset, crc = o
                    f.seek(offset)
                    data = f.read(n)
                    if len(data) != n or crc32(data) != crc:
                        raise ValueDamaged(
                            f"{self.path} is damaged at byte {offset} (the value of a "
                            f"finished {rec.name} call, {n} bytes, does not match its "
                            f"checksum): it is not restored, that call runs again")
                    out.append(data)
                else:
                    out.append(None)
        return out


def log_origin(run_dir: str) -> tuple[str, list[str]] | None:
    """Where and how the run that wrote ``run_dir``'s resume log was started: (cwd,
    sys.argv), from the log's first record; None when the log has none or cannot say
    (``taskflow run --resume`` when the run's journal cannot be read)."""
    import json
    try:
        with open(os.path.join(run_dir, LOG_NAME), "rb") as f:
            if f.read(len(MAGIC)) not in READS:
                return None
            frame = frame_at(f, len(MAGIC), os.fstat(f.fileno()).st_size)
            if not isinstance(frame, Frame):
                return None
            _, records = pickle.loads(frame.header)
            for rec in records:
                if rec[0] == "o":
                    argv = json.loads(rec[2])
                    return (str(rec[1]), [str(a) for a in argv]) if isinstance(argv, list) \
                        else None
    except Exception:  # noqa: BLE001 - no origin to tell: the run is not found by it
        return None
    return None


def _placed(out: Output, start: int) -> tuple[Output, int]:
    """A value's description with where its bytes are in the log; where the next start."""
    if out[0] in ("v", "V"):
        kind, n, crc = out
        return (kind, n, start, crc), start + n
    return out, start


def _damage_text(path: str, damages: list[Damage], used: list[int], total: int,
                 skipped: int) -> str:
    """What the reader says of a damaged log: where, why, and what it used (one line)."""
    pos, why, resumed = damages[0]
    text = f"{path} is damaged at byte {pos} ({why}): the {used[0]} record(s) before it are used"
    if resumed is None:
        text += ", nothing after it (no intact frame follows)"
    else:
        text += (f", and reading went on at the next intact frame (byte {resumed}): "
                 f"{total - used[0]} record(s) after it are used too")
    if len(damages) > 1:
        more = ", ".join(str(d.pos) for d in damages[1:4]) + (", ..." if len(damages) > 4
                                                              else "")
        text += f"; {len(damages) - 1} more damaged frame(s), at byte {more}"
    if skipped:
        text += (f"; {skipped} record(s) of functions named in a damaged frame are not "
                 f"used")
    return text + "; the calls the damaged frames held run again"


class Resumer:
    """In a resumed run: restore the calls an earlier run finished; say why others rerun."""

    def __init__(self, store: ResumeStore, failed: set[tuple[str, int]],
                 mode: str = "content") -> None:
        self.store = store
        self.failed = failed                       # (name, ordinal) of its failed calls
        self.mode = mode                           # how input files are compared (keys)
        self.reruns: dict[str, dict[str, int]] = {}   # name -> reason -> count
        self.reused: dict[str, int] = {}           # name -> calls restored or adopted
        self.restored = 0

    def find(self, key: bytes | None, name: str, ordinal: int,
             parts: KeyParts | None, files: dict[str, str] | None = None
             ) -> tuple[Record | None, str]:
        """The record to restore from, or None and why the call runs again (reasons.py;
        ``files``: the call's input files by parameter, named in the reason). Counts the
        call in :attr:`reused` or :attr:`reruns`, so that a plan that runs nothing (and
        :meth:`restore`) calls this once per call and then prints :meth:`lines`."""
        rec = self.store.by_key.get(key) if key is not None else None
        if rec is not None:
            if any(o[0] == "f" for o in rec.outputs):
                rec = self._files_where(rec)
            if any(o[0] == "h" for o in rec.outputs):
                why = "its value stayed on a node and was not kept"
            elif any(o[0] == "f" and not os.path.exists(o[1]) for o in rec.outputs):
                why = "the file it wrote is gone from the earlier run's directory"
            elif any(o[0] == "f?" for o in rec.outputs):
                why = "the file it wrote was changed or removed since"
            else:
                self.reused[name] = self.reused.get(name, 0) + 1
                return rec, ""
        else:
            old = self.store.by_call.get((name, ordinal))
            why = why_again(old.parts if old is not None else None,
                            parts or KeyParts(b"", ()), (name, ordinal) in self.failed,
                            files, self.mode)
        counts = self.reruns.setdefault(name, {})
        counts[why] = counts.get(why, 0) + 1
        return None, why

    def _files_where(self, rec: Record) -> Record:
        """``rec`` with its file versions where they are now: moved to the user's path at
        the earlier run's end, and still as it left them (else ``("f?",)``)."""
        outs = []
        for o in rec.outputs:
            if o[0] == "f" and o[1] in self.store.moved:
                path, size, mtime = self.store.moved[o[1]]
                try:
                    st = os.stat(path)
                    same = (st.st_size, st.st_mtime_ns) == (size, mtime)
                except OSError:
                    same = False
                o = ("f", path) if same else ("f?",)
            outs.append(o)
        return rec._replace(outputs=tuple(outs))

    def restore(self, rt: RunState, task: Task, deps: Iterable[Future], log: ResumeLog | None,
                adoption: Adoption | None, listed: bool = False) -> bool:
        """Under the run's lock: finish ``task`` from the earlier run's record, if it has
        one, or as a task an adopted agent kept (True); else say why it runs again (False).
        ``log``: this run's resume log, which keeps the restored record too; ``listed``:
        the call is in the graph already, its row made (a stream's consumer held until its
        stream was replayed: runtime/streamreplay.py), so its dependents and callbacks may
        wait on it."""
        from ..rules import outcomes
        from ...events import Resumed
        name = task.spec.name
        rec, why = self.find(task.key, name, task.ordinal, task.key_parts,
                             file_paths(task) if task.refs else None)
        bus = rt.bus
        if rec is None and adoption is not None and adoption.claim(rt, task):
            self.reruns[name][why] -= 1       # (adopted: it does not run again)
            self.reused[name] = self.reused.get(name, 0) + 1
            return True
        values: list[bytes | None] = []
        if rec is not None:
            try:
                values = self.store.values(rec)
            except ValueDamaged as exc:
                why = "its record in the earlier run's resume log is damaged"
                self.reused[name] -= 1
                counts = self.reruns.setdefault(task.spec.name, {})
                counts[why] = counts.get(why, 0) + 1
                self.said(rt, str(exc))
                rec = None
        if rec is None:
            if bus.active:
                bus.emit(Resumed("rerun", time.time(), task.id, task.spec.name, "", why))
            return False
        if bus.active:
            if not listed:
                bus.sub_rows.append(
                    (task, [i for i in (d.producer_id() for d in deps) if i])
                    if deps else task)
            bus.emit(Resumed("restored", time.time(), task.id, task.spec.name, "",
                             f"from run {os.path.basename(self.store.run_dir)}"))
        futs = task.all_outputs()
        cbs: list[Any] = []
        outcomes.task_restored(rt, task, rec.outputs, values, cbs)
        if cbs:         # (a held call's futures' callbacks: run without the run's lock)
            import threading
            threading.Thread(target=_callbacks, args=(cbs,), daemon=True).start()
        self.restored += 1
        if log is not None:             # kept here too: a later resume of this run finds it
            log.add([("k", task.id, rec.key, rec.name, task.ordinal, rec.parts,
                         plain_descs(rec.outputs), tuple(f._did for f in futs))],
                       [v for v in values if v is not None])
            for o in rec.outputs:       # (a file at the user's path: checked again then)
                if o[0] == "f" and not o[1].startswith(self.store.run_dir + os.sep):
                    log.moved(o[1], o[1])
        return True

    def said(self, rt: RunState, text: str) -> None:
        """A damage of the earlier run's records: on the console and in the journal."""
        log.warning("%s", text)
        journal_note(rt, text)

    def lines(self, would: bool = False) -> list[str]:
        """One line per task name: calls reused of how many, and why the others ran
        (``would``: would run, for a plan)."""
        return summary_lines(self.reused, self.reruns, would)


def _callbacks(cbs: list[Any]) -> None:
    for fn, fut in cbs:
        fn(fut)


def journal_note(rt: RunState, text: str) -> None:
    """A line of the run's own (``TASKFLOW``, no task) in its journal's logs."""
    if rt.bus.active:
        from ...events import NodeNote
        rt.bus.emit(NodeNote("log", time.time(), 0, "", "", ("TASKFLOW", text)))


def failed_calls(run_dir: str) -> set[tuple[str, int]]:
    """(name, ordinal) of the calls that failed in an earlier run (from its journal)."""
    from ...journal.reader import Journal
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
