"""An executor's inputs: the values its tasks read, and the outputs it keeps for them.

A task's values come from two places: the frame that brought the task (the
agent sends the values it holds with the tasks that read them), and this
executor's own recent outputs (:data:`PRODUCED`), for a task queued right
behind the task that makes its input (a chained task: no round trip).

A value with large buffers (:class:`~taskflow.wire.messages.Packed`) is
*taken* by its last reader: the task gets an object built on those very
buffers (a numpy array over the memory that came down the pipe, or over the
array the producer returned), with no copy. A reader that is not the last one
on this executor (:data:`AHEAD` looks at the tasks received and not run yet)
gets its own copy, so no task ever sees another task's changes. A value taken
or trimmed away that a task still needs is not an error of the task: it is
reported as missing (:class:`Missing`) and the agent sends the task again
with the value it holds.
"""
from __future__ import annotations

import io
import os
import pickle
import stat
from typing import Any

from ...wire import messages as M
from ...wire import values as V
from ...wire.argpath import set_path
from . import programs, sharedfiles
from .keepinputs import KEEP_ALL


class Missing(Exception):
    """An input is on neither the frame nor this executor (the agent resends the task)."""

    def __init__(self, did: int) -> None:
        super().__init__(f"input d{did} is not on this executor")
        self.did = did


class _PersistentUnpickler(pickle.Unpickler):
    def __init__(self, data: bytes, values: dict[int, Any]) -> None:
        super().__init__(io.BytesIO(data))
        self.values = values

    def persistent_load(self, pid: Any) -> Any:
        return self.values[pid]


class _Produced:
    """This executor's recent outputs, for chained tasks queued right behind.

    A plain dict in insertion order, trimmed to its newest half when it holds
    more than ``limit`` values or ``budget`` bytes: one C-level store per task
    and an O(n) rebuild every ``limit / 2`` of them (an OrderedDict subclass
    with a pop per insert cost 0.8 us per task; popping from the front of a
    plain dict one by one leaves dead slots that later scans walk over). The
    newest value stays whatever its size (a chain of 100 MB arrays finds its
    input here); a reader that takes a value removes it.
    """

    budget = 64 * 2**20      # bytes of values over ``small`` (4096 small ones: 64 MiB at most)
    limit = 4096
    small = 16384

    def __init__(self) -> None:
        self.values: dict[int, M.Payload] = {}
        self.big = 0             # bytes held in values over ``small``
        self.get = self.values.get

    def keep(self, did: int, payload: M.Payload) -> None:
        values = self.values
        values[did] = payload
        n = len(payload)
        if n > self.small:
            self.big += n
            if self.big > self.budget:
                self._trim()
        elif len(values) > self.limit:
            self._trim()

    def take(self, did: int) -> None:
        payload = self.values.pop(did, None)
        if payload is not None and len(payload) > self.small:
            self.big -= len(payload)

    def _trim(self) -> None:
        if not self.big:           # small values only: keep the newest half, in C
            self.values = dict(list(self.values.items())[-(self.limit // 2):])
            self.get = self.values.get
            return
        keep: list[tuple[int, M.Payload]] = []
        big = 0
        for did, payload in reversed(list(self.values.items())):
            n = len(payload)
            if keep and (len(keep) >= self.limit // 2
                         or (n > self.small and big + n > self.budget // 2)):
                break
            keep.append((did, payload))
            if n > self.small:
                big += n
        self.values = dict(reversed(keep))
        self.big = big
        self.get = self.values.get


PRODUCED = _Produced()


def _reads(t: M.TaskWire, did: int) -> bool:
    _, _, _, refs, *_ = t
    if refs:
        for _, kind, payload in refs:
            if (kind == M.REF_VALUE and payload == did) or \
                    (kind == M.REF_PICKLED and did in payload[1]):
                return True
    return False


class _Ahead:
    """The work this executor has received and not run yet (read only for large values)."""

    __slots__ = ("frames", "current", "task")

    def __init__(self) -> None:
        self.frames: Any = ()                       # the frames after the running one
        self.current: list[M.TaskWire] | None = None    # the running frame's tasks
        self.task: M.TaskWire | None = None         # the task whose inputs are resolved

    def others_read(self, did: int) -> bool:
        """Some task after the current one reads ``did`` (in this frame or the next ones)."""
        tasks = self.current
        if tasks is not None:
            start = next((j + 1 for j, t in enumerate(tasks) if t is self.task), 0)
            for j in range(start, len(tasks)):
                if _reads(tasks[j], did):
                    return True
        for op, body in self.frames:
            if op == M.TASKS and any(_reads(t, did) for t in body[0]):
                return True
        return False


AHEAD = _Ahead()


def resolve_refs(args: list[Any], kwargs: dict[str, Any], refs: list[M.RefWire],
                 data: dict[int, M.Payload]) -> None:
    """Put the task's inputs in place: values, snapshots, paths (see the module doc)."""
    values: dict[int, Any] = {}

    def value_of(did: int) -> Any:
        if did in values:
            return values[did]
        payload = data.get(did)
        mine = payload is None
        if mine:
            payload = PRODUCED.get(did)
            if payload is None:
                raise Missing(did)
        if type(payload) is bytes:
            v = pickle.loads(payload)
        elif type(payload) is M.Shared:     # type: ignore[comparison-overlap]  # (sharedfiles)
            try:                            # a file of the agent's (copy-on-write: its own)
                v = V.load(sharedfiles.read(payload), take=True)
            except FileNotFoundError:
                raise Missing(did) from None
        else:
            assert payload is not None
            last = not KEEP_ALL and not AHEAD.others_read(did)   # (keepinputs)
            v = V.load(payload, take=last)
            if last:                # built on its buffers: nobody else may read them
                if mine:
                    PRODUCED.take(did)
                else:
                    del data[did]
        values[did] = v
        return v

    for path, kind, payload in refs:
        if kind == M.REF_VALUE:
            v = value_of(payload)
        elif kind == M.REF_PICKLED:
            programs.python_ran()       # a snapshot of objects: unpickling may run their code
            blob, dids = payload
            v = _PersistentUnpickler(blob, {d: value_of(d) for d in dids}).load() if dids \
                else pickle.loads(blob)
        else:
            v = _path_ref(kind, payload)
        set_path(args, kwargs, path, v)


def _path_ref(kind: str, payload: Any) -> Any:
    """A file or directory argument: where the task reads or writes it."""
    if kind == M.REF_FILE:                  # file or directory read in place
        return payload
    import shutil     # (not at the top: ~5 ms of every agent's start-up)
    if kind == M.REF_FILE_OUT:              # file written: a fresh version path
        # Its folder is the version's own (new: made, it holds no old file, in one call)
        # or shared with the other files of its user folder (there already: nearly always
        # no file at the path); a task sent again finds what it left there
        folder = os.path.dirname(payload)
        there = False
        if folder:
            try:
                os.mkdir(folder)
            except FileExistsError:
                there = True
            except OSError:
                pass
            else:
                return payload
        try:
            st = os.stat(payload)
        except FileNotFoundError:           # (its store's folder was missing, or a retry)
            if not there and not os.path.isdir(folder):
                os.makedirs(folder, exist_ok=True)
            return payload
        if stat.S_ISDIR(st.st_mode):
            shutil.rmtree(payload)
        else:
            os.unlink(payload)
        return payload
    if kind == M.REF_DIR_OUT:               # directory written
        if os.path.exists(payload):
            shutil.rmtree(payload)
        os.makedirs(payload)
        return payload
    if kind == M.REF_FILE_INOUT or kind == M.REF_DIR_INOUT:   # copy the previous first
        src, dst = payload
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if kind == M.REF_DIR_INOUT:
            if os.path.exists(dst):
                shutil.rmtree(dst)
            shutil.copytree(src, dst, symlinks=True)
        else:
            shutil.copyfile(src, dst)
        return dst
    raise ValueError(f"unknown ref kind {kind!r}")  # pragma: no cover - protocol misuse
