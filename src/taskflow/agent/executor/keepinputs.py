"""What a failed task was given, kept for ``taskflow rerun`` (node side).

When a task fails, its executor writes ``<run dir>/inputs/task-<id>.pkl``: the
task's message as the master sent it (arguments, file version paths, a
program's invocation), the values its references name as they came (pickled
bytes, never unpickled here), its function (cloudpickle), the node's
``sys.path``, working directory and environment (less the variables whose names say
they hold secrets: ``*SECRET*``, ``*TOKEN*``, ``*PASSWORD*``, ...), and the error. The file
versions it reads are linked into ``inputs/task-<id>/`` (a hard link: no copy,
and the run's later moves and deletions of its versions do not take them).
Only the failure path pays for this, and it is bounded: an executor writes at most
``RECORDS_MAX`` records, a record keeps at most ``VALUES_MAX`` bytes of values (a value
past it is named as not kept).

A large value (a numpy array) is handed to its last reader without a copy
(:mod:`.inputs`): the task may have changed it, so it is not kept; one sent as
the name of its agent's shared file (:mod:`.sharedfiles`) is read again from
that file, which no task changes, and kept.
``TASKFLOW_KEEP_INPUTS=1`` in the nodes' environment (local nodes inherit the
master's) keeps every such value: the reader gets a copy.
"""
from __future__ import annotations

import os
import pickle
import shutil
from typing import Any

from ...wire import messages as M
from . import loglines, sharedfiles

KEEP_ALL = os.environ.get("TASKFLOW_KEEP_INPUTS", "").strip().lower() in ("1", "true", "yes", "on")
COPY_MAX = 64 * 2**20       # bytes: a file that cannot be linked is copied up to this size
VALUES_MAX = 256 * 2**20    # bytes of values one record keeps (past it: named as not kept)
RECORDS_MAX = 256           # records one executor writes (a run of many failures is bounded)
_written = 0                # records this executor wrote
RECORD = "task-{tid}.pkl"
FORMAT = 1                  # the record's layout (taskflow rerun refuses another)


def inputs_dir(run_dir: str) -> str:
    """Where a run's task records are."""
    return os.path.join(run_dir, "inputs")


def keep(msg: M.TaskWire, func: Any, data: dict[int, M.Payload], produced: Any,
         error: M.ErrorInfo | None) -> None:
    """Write task ``msg``'s record (module docstring); never raises (it is a failure's
    aftermath: the task's own error is what the run must see)."""
    try:
        _keep(msg, func, data, produced, error)
    except Exception:  # noqa: BLE001 - a record that cannot be written is only missing
        pass


def _keep(msg: M.TaskWire, func: Any, data: dict[int, M.Payload], produced: Any,
          error: M.ErrorInfo | None) -> None:
    global _written
    if not loglines.KEEP_DIR or _written >= RECORDS_MAX:
        return
    _written += 1
    import cloudpickle
    import sys
    run_dir = os.path.dirname(loglines.KEEP_DIR[0])
    task = M.TaskMsg(*msg)
    tid = task.task_id
    where = inputs_dir(run_dir)
    os.makedirs(where, mode=0o700, exist_ok=True)
    values: dict[int, Any] = {}
    missing: list[int] = []
    size = 0
    files: dict[str, str] = {}
    for _, kind, payload in task.refs or ():
        dids: list[int] = []
        if kind == M.REF_VALUE:
            dids = [payload]
        elif kind == M.REF_PICKLED:
            _, dids = payload             # (the snapshot's pickle, the values inside it)
        for did in dids:
            v: Any = data.get(did)      # (data: Payloads, or the names of shared files)
            if type(v) is M.Shared:       # (the agent's file: as it was, whatever the task did)
                try:
                    v = sharedfiles.read(v)
                except (OSError, ValueError):
                    v = None
            if v is None:
                v = produced.get(did)
            if v is None or size + len(v) > VALUES_MAX:
                missing.append(did)
            else:
                values[did] = v
                size += len(v)
        path = None
        if kind == M.REF_FILE:
            path = payload
        elif kind in (M.REF_FILE_INOUT, M.REF_DIR_INOUT):
            path, _ = payload             # (the version read, the one written)
        if path is not None:
            kept = _link(path, os.path.join(where, f"task-{tid}", f"{len(files)}"))
            if kept is not None:
                files[path] = kept
    try:
        code = getattr(func, "__code__", None)       # (as a FUNC frame: its file's name)
        fblob = cloudpickle.dumps((func, code.co_filename if code is not None else None))
    except Exception:  # noqa: BLE001 - then rerun says the function is not kept
        fblob = None
    record = {"format": FORMAT, "task_id": tid, "msg": msg, "func": fblob, "values": values,
              "missing": missing, "files": files, "sys_path": [p for p in sys.path if p], "cwd": os.getcwd(),
              "env": {k: v for k, v in os.environ.items() if not _secret(k)},
              "error": (error.type_name, error.message) if error is not None else None}
    tmp = os.path.join(where, f".{RECORD.format(tid=tid)}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            pickle.dump(record, f, protocol=5)
        os.replace(tmp, os.path.join(where, RECORD.format(tid=tid)))
    except BaseException:
        os.unlink(tmp)          # (a full disk: no half record left)
        raise


_SECRET_WORDS = ("SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE", "API_KEY")


def _secret(name: str) -> bool:
    """A variable whose name says it holds a secret: not written into a record."""
    up = name.upper()
    return any(w in up for w in _SECRET_WORDS)


def _link(path: str, into: str) -> str | None:
    """``path`` linked (or, small, copied) under ``into``; None when it cannot be kept."""
    if not os.path.exists(path):
        return None
    os.makedirs(into, mode=0o700, exist_ok=True)
    dst = os.path.join(into, os.path.basename(path.rstrip("/")) or "data")
    if os.path.isdir(path):
        shutil.copytree(path, dst, symlinks=True, copy_function=_link_or_copy)
        return dst
    _link_or_copy(path, dst)
    return dst


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:
        if os.path.getsize(src) <= COPY_MAX:
            shutil.copy2(src, dst)
        else:
            raise
