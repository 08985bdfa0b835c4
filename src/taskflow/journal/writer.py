"""The journal writer: the runtime's events into SQLite, off the hot path.

:class:`JournalWriter` subscribes to the runtime's event bus. By default the
SQLite work happens in a small child process (``taskflow.journal.child``):
the bus thread only pickles each batch down a pipe (:mod:`.wire` reduces the
specs, futures and errors the events refer to), so the master's GIL is not
spent on SQL or on the parameters' text. ``TASKFLOW_JOURNAL=thread`` writes from the bus thread
instead. Either way :class:`JournalDB` writes a batch in one transaction:
rows of a task submitted, dispatched and finished within one batch (the
common case for short tasks) become one INSERT; other changes are coalesced
per task and applied with ``executemany``. WAL mode lets ``taskflow status``,
``taskflow logs --follow`` and the monitor read while the run writes.
"""
from __future__ import annotations

import logging
import json
import os
import pickle
import socket
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from .schema import JOURNAL_NAME, SCHEMA

if TYPE_CHECKING:
    from ..runtime.events import EventBus, RowBatch

log = logging.getLogger(__name__)

LOG_CAP = 20000          # lines stored per task; the rest are counted, then stated in the log
# A task's row as the writer holds it (the ``task_rows`` table; the ``tasks`` view
# adds the name, function and constraints from ``specs``: see schema.py).
_COLS = ("id", "spec", "params", "node", "state", "t_submit", "t_dispatch", "t_start",
         "t_end", "attempts", "exit_code", "error", "error_full", "traceback")
_IDX = {c: i for i, c in enumerate(_COLS)}
(_SPEC, _PARAMS, _NODE, _STATE, _T_SUBMIT, _T_DISPATCH, _T_START, _T_END, _ATTEMPTS,
 _EXIT, _ERROR) = (_IDX[c] for c in ("spec", "params", "node", "state", "t_submit",
                                      "t_dispatch", "t_start", "t_end", "attempts",
                                      "exit_code", "error"))
_INSERT = f"INSERT INTO task_rows ({','.join(_COLS)}) VALUES ({','.join('?' * len(_COLS))})"
# Rows without an exit code or an error (nearly all) bind 4 parameters fewer.
_NOERR = _EXIT
_INSERT_OK = (f"INSERT INTO task_rows ({','.join(_COLS[:_NOERR])}) "
              f"VALUES ({','.join('?' * _NOERR)})")
_ENDED = frozenset({"DONE", "FAILED", "CANCELLED", "INTERRUPTED"})


def _spec_names(info: tuple[Any, ...]) -> Any:
    """A task function's parameter names, from its summary (wire._spec_info)."""
    _, _, names, _ = info
    return names


def _spec_name(info: tuple[Any, ...]) -> str:
    _, _, _, name = info
    return str(name)


def short(value: Any, limit: int = 60) -> str:
    """A value's repr cut to ``limit`` characters (never raises)."""
    try:
        r = repr(value)
    except Exception as exc:  # noqa: BLE001 - a user's __repr__ may fail
        r = f"<{type(value).__name__}: repr failed: {exc}>"
    return r if len(r) <= limit else r[:limit - 3] + "..."


def ref_summary(refs: Any) -> list[tuple[Any, str]] | None:
    """What the journal shows of a call's resolved arguments: (position, label) pairs."""
    if not refs:
        return None
    out: list[tuple[Any, str]] = []
    # kinds: taskflow.wire.messages.REF_* (this module loads without the package: literals)
    for path, kind, obj in refs:        # futures come as (data id, path): see wire.py
        if len(path) != 1:
            continue
        (pos,) = path
        if kind == "r":
            did, _ = obj
            out.append((pos, f"<data d{did}>"))
        elif kind == "p":
            out.append((pos, "<data>"))
        else:
            _, fpath = obj[-1] if kind in ("fio", "dio") else obj    # (old, new): the new one
            what = "dir" if kind.startswith("d") else "file"
            out.append((pos, f"<{what} {os.path.basename(fpath or '')}>"))
    return out


def params_text(names: Any, argv: Any, kwargs: Any, shown: Any) -> str:
    """``a=1, f=<file in.txt>, x=<data d3>`` for a task's call."""
    if not shown and not kwargs and names and argv is not None and len(argv) <= len(names):
        return ", ".join([f"{n}={short(v)}" for n, v in zip(names, argv)])
    shown = dict(shown or ())
    names = names or ()
    parts = []
    for i, v in enumerate(argv or ()):
        label = names[i] if i < len(names) else f"arg{i}"
        parts.append(f"{label}={shown[i] if i in shown else short(v)}")
    for k, v in (kwargs or {}).items():
        parts.append(f"{k}={shown[k] if k in shown else short(v)}")
    return ", ".join(parts)


def _constraints(spec: Any) -> str:
    c: dict[str, Any] = {"computing_units": getattr(spec, "computing_units", 1)}
    if getattr(spec, "memory_size", 0):
        c["memory_size"] = spec.memory_size
    for k in ("processors", "time_out", "on_failure", "priority", "invoker"):
        v = getattr(spec, k, None)
        if v and v != "python" and not (k == "on_failure" and v == "RETRY"):
            c[k] = v if isinstance(v, (int, float, str)) else short(v, 200)
    recorded = getattr(spec, "recorded", None)     # hints accepted with no effect (PyCOMPSs)
    if recorded:
        c["recorded"] = {k: v if isinstance(v, (int, float, str, bool)) else short(v, 100)
                         for k, v in recorded.items()}
    params = (getattr(spec, "invoker_cfg", None) or {}).get("params") or {}
    streams = {p: st for p, (_, _, st, _) in params.items() if st}
    if streams:         # a program's stdin/stdout/stderr bound to a file parameter
        c["streams"] = streams
    return json.dumps(c)


def stream_paths(names: Any, refs: Any, streams: dict[str, str]) -> dict[str, list[str]]:
    """{stream: [parameter, the user's path]} of a program task's stream parameters."""
    out: dict[str, list[str]] = {}
    for path, kind, obj in refs or ():
        if len(path) != 1 or kind not in ("f", "fo", "fio"):
            continue
        (pos,) = path
        pname = names[pos] if isinstance(pos, int) and pos < len(names) else pos
        stream = streams.get(pname)
        if stream is not None:
            _, fpath = obj[-1] if kind == "fio" else obj      # (old, new): the new one
            out[stream] = [str(pname), str(fpath)]
    return out


def _exit_code(err: Any) -> int | None:
    """An external program's exit code, when the error carries one (@binary, @mpi)."""
    for e in (err, getattr(err, "__cause__", None)):
        for attr in ("exit_code", "returncode"):
            v = getattr(e, attr, None)
            if isinstance(v, int):
                return v
    return None


def _private(run_dir: str, path: str) -> None:
    """The run directory (0700) and the journal file (0600) before SQLite opens it: its
    -wal and -shm files get the database file's permissions."""
    from ..context import private_dir, private_file
    private_dir(run_dir)
    private_file(path)


def run_row(run_id: str, t_start: float, workers: int, version: str) -> tuple[Any, ...]:
    """The ``run`` table's row of a run that starts now in this process."""
    return (run_id, t_start, "running", json.dumps(sys.argv), os.getcwd(),
            socket.gethostname(), os.getpid(), workers, version)


class JournalDB:
    """The SQLite side: owns ``journal.db`` while the run goes on."""

    def __init__(self, path: str, row: tuple[Any, ...]) -> None:
        self.path = path
        import sqlite3      # here: the master imports this module without opening a database
        self.db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA synchronous=NORMAL")
        self.db.executescript(SCHEMA)
        self._nlogs: dict[int, int] = {}
        self._held: dict[int, list[Any]] = {}    # task rows not inserted yet (see write)
        self._specs: dict[tuple[Any, ...], int] = {
            (f, c, n): i for i, n, f, c in
            self.db.execute("SELECT id, name, func, constraints FROM specs")}
        self._new_specs: list[tuple[int, str, str, str]] = []
        # specs with stream parameters -> {parameter: stream}; their tasks' paths (STREAMS rows)
        self._streams: dict[int, dict[str, str]] = {}
        self._stream_rows: list[tuple[int, str]] = []
        self.db.execute(
            "INSERT OR REPLACE INTO run (run_id, t_start, state, argv, cwd, hostname, pid, "
            "workers, version) VALUES (?,?,?,?,?,?,?,?,?)", row)
        self.run_id = row[0]

    HOLD = 0.5   # s a new task's row waits in memory, so its end lands in the same INSERT

    def write(self, batch: tuple[Any, ...], final: bool = False) -> None:
        """One delivery of the bus (``runtime.events.RowBatch``) in one transaction."""
        # (the rows as wire.py reduced them: a spec is its summary, a future (id, path))
        whole, sub, evs, done_rows = batch
        new: dict[int, list[Any]] = self._held
        changes: dict[int, dict[str, Any]] = {}
        deps: list[tuple[int, int]] = []
        trans: list[tuple[Any, ...]] = []
        logs: list[tuple[Any, ...]] = []
        nodes: list[tuple[Any, ...]] = []
        lost: list[tuple[Any, ...]] = []
        states: list[tuple[str, str]] = []
        samples: list[tuple[Any, ...]] = []
        usage: list[tuple[int, float, int]] = []
        memory: list[tuple[Any, ...]] = []
        nlogs = self._nlogs
        ready: list[tuple[Any, ...]] = []     # whole rows of tasks submitted and done within this batch
        if whole or sub:
            # The common case for short tasks: a task's submit and successful end are in
            # the same batch and no other event names it. Its row is made whole at once.
            touched = {tid for kind, _, tid, _, _, _ in evs if kind != "usage"} if evs else ()
            late = []       # ends of whole rows that other events of the batch name
            for tid, t, info, argv, kwargs, refs, dep_ids, t0, t1, tdisp, node, att, code \
                    in whole or ():
                sid, params = self._row_start(tid, info, argv, kwargs, refs, dep_ids, deps)
                if code is None and tid not in touched:
                    ready.append((tid, sid, params, node, "DONE", t, tdisp or None, t0 or None,
                                  t1, att))
                    continue
                new[tid] = [tid, sid, params, "", "SUBMITTED", t, None, None, None,
                            0, None, None, None, None]
                late.append((tid, t0, t1, tdisp, node, att, _spec_name(info), code))
            if late:
                done_rows = late + (done_rows or [])
            done_by = {r[0]: r for r in done_rows} if done_rows and sub else None  # by id

            for tid, t, info, argv, kwargs, refs, dep_ids in sub or ():
                sid, params = self._row_start(tid, info, argv, kwargs, refs, dep_ids, deps)
                d = done_by.get(tid) if done_by else None
                if d is not None and tid not in touched:
                    _, t0, t1, tdisp, node, att, _, code = d
                    if code is None:
                        del done_by[tid]  # type: ignore[union-attr]  # d came from it
                        ready.append((tid, sid, params, node, "DONE", t, tdisp or None,
                                      t0 or None, t1, att))
                        continue
                new[tid] = [tid, sid, params, "", "SUBMITTED", t, None, None, None,
                            0, None, None, None, None]
            if done_by is not None:
                done_rows = list(done_by.values())
        row: list[Any] | None
        for ev in evs:
            kind, t, tid, name, node, extra = ev
            if kind == "usage":
                cpu, peak = extra
                usage.append((tid, cpu, peak))
                continue
            if kind == "log":
                n = nlogs.get(tid, 0) + 1
                nlogs[tid] = n
                if n <= LOG_CAP:
                    level, line = extra
                    logs.append((tid, t, level, node, line))
                continue
            if kind == "submitted":
                dep_ids, argv, kwargs, refs, info = extra     # see wire.py
                params = params_text(_spec_names(info), argv, kwargs,
                                     ref_summary(refs) if refs else None)
                sid = self._spec_id(info, name)
                if refs and sid in self._streams:
                    self._stream_rows.append((tid, json.dumps(stream_paths(
                        _spec_names(info), refs, self._streams[sid]))))
                row = [tid, sid, params, "", "SUBMITTED", t, None, None,
                       None, 0, None, None, None, None]
                new[tid] = row
                if dep_ids:
                    deps.extend([(tid, d) for d in dep_ids])
                continue
            if extra is not None and kind == "dispatched":   # several slots: where
                trans.append((tid, t, "PLACED", node, json.dumps(extra)))
            elif kind == "ready":
                trans.append((tid, t, "READY", node, None))
            row = new.get(tid)
            if row is not None:             # fast paths: the task's row is still in hand
                if kind == "ready":
                    if row[_STATE] == "SUBMITTED":
                        row[_STATE] = "READY"
                    continue
                if kind == "dispatched":
                    row[_NODE] = node
                    row[_STATE] = "DISPATCHED"
                    row[_T_DISPATCH] = t
                    continue
                if kind == "running":
                    row[_NODE] = node
                    row[_STATE] = "RUNNING"
                    row[_T_START] = t
                    continue
                if kind == "done" and extra and not nlogs.get(tid, 0) > LOG_CAP:
                    t0, t1, _, _, attempts, tdisp = extra      # outcomes._ended
                    row[_NODE] = node
                    row[_STATE] = "DONE"
                    row[_T_START] = t0 or None
                    row[_T_END] = t1 or t
                    row[_ATTEMPTS] = attempts
                    if tdisp:
                        row[_T_DISPATCH] = tdisp
                    nlogs.pop(tid, None)
                    continue
            if kind == "ready":
                if tid not in changes:   # (an update never moves a later state back)
                    changes[tid] = {"state": "READY"}
                continue
            if kind == "dispatched":
                ch = {"state": "DISPATCHED", "node": node, "t_dispatch": t}
            elif kind == "running":
                ch = {"state": "RUNNING", "node": node, "t_start": t}
            elif kind in ("done", "failed", "cancelled", "interrupted"):
                state = kind.upper()
                ch = {"state": state, "t_end": t}
                if node:
                    ch["node"] = node
                if extra:
                    t0, t1, first_line, error, attempts, tdisp = extra   # outcomes._ended
                    if t0:
                        ch["t_start"] = t0
                    if t1:
                        ch["t_end"] = t1
                    if first_line:
                        ch["error"] = first_line
                    if error is not None:
                        ch["error_full"], ch["traceback"], code = error     # see wire.py
                        if code is not None:
                            ch["exit_code"] = code
                    ch["attempts"] = attempts
                    if tdisp:
                        ch["t_dispatch"] = tdisp
                n = nlogs.pop(tid, 0)
                if n > LOG_CAP:
                    logs.append((tid, t, "RAW", node, f"[taskflow] {n - LOG_CAP} more lines "
                                 f"not stored (journal cap {LOG_CAP} lines per task)"))
            elif kind == "retry":
                ch = {"state": "READY", "node": ""}
                trans.append((tid, t, "RETRY", node, str(extra)))
            elif kind == "rerun" or kind == "restored":     # resumed runs (runtime/resume.py)
                trans.append((tid, t, kind.upper(), node, str(extra)))
                continue
            elif kind == "node_join":
                info = extra if isinstance(extra, dict) else {}
                nodes.append((node, t, info.get("slots"), json.dumps(info, default=str)))
                continue
            elif kind == "node_lost" or kind == "node_left":
                lost.append((t, str(extra), node))
                continue
            elif kind == "node_state":          # how the node's Slurm job ended
                states.append((f" [slurm job {extra.get('job_id')}: {extra.get('state')}]", node))
                continue
            elif kind == "sample":
                s = extra if isinstance(extra, dict) else {}
                samples.append((node, t, s.get("cpu"), s.get("mem"), s.get("load1"),
                                json.dumps(s, default=str)))
                continue
            elif kind == "memory":              # dispatch._memory: a node's memory report
                rss, held, spilled, paused, happened = extra
                spills = [n for what, _, n in happened if what == "spill"]
                reads = sum(n for what, _, n in happened if what == "read")
                memory.append((node, t, rss, held, spilled, int(paused), len(spills),
                               sum(spills), reads))
                continue
            else:
                continue
            if row is not None:
                for k, v in ch.items():
                    row[_IDX[k]] = v
            else:
                old = changes.get(tid)
                if old is None:
                    changes[tid] = ch
                else:
                    old.update(ch)
        if done_rows:
            self._done_rows(done_rows, new, changes, logs)
        db = self.db
        db.execute("BEGIN")
        try:
            if self._new_specs:
                db.executemany("INSERT INTO specs (id, name, func, constraints) VALUES (?,?,?,?)",
                               self._new_specs)
                self._new_specs = []
            if ready:
                db.executemany(_INSERT_OK, ready)
            if new:
                if final:
                    rows, self._held = list(new.values()), {}
                else:
                    # Rows of tasks still running wait a little: most short tasks end
                    # within HOLD, and one INSERT is cheaper than INSERT + UPDATE.
                    cut = time.time() - self.HOLD
                    rows = [r for r in new.values() if r[_STATE] in _ENDED or r[_T_SUBMIT] < cut]
                    if len(rows) == len(new):
                        self._held = {}
                    else:
                        for r in rows:
                            del new[r[0]]
                if rows:
                    ok = [r[:_NOERR] for r in rows if r[_EXIT] is None and r[_ERROR] is None]
                    if ok:
                        db.executemany(_INSERT_OK, ok)
                    if len(ok) < len(rows):
                        db.executemany(_INSERT, [r for r in rows if r[_EXIT] is not None
                                                 or r[_ERROR] is not None])
            if changes:
                groups: dict[tuple[str, ...], list[Any]] = {}
                for tid, ch in changes.items():
                    keys = tuple(ch)
                    groups.setdefault(keys, []).append((*ch.values(), tid))
                for keys, rows in groups.items():
                    sets = ", ".join(f"{k}=?" for k in keys)
                    db.executemany(f"UPDATE task_rows SET {sets} WHERE id=?", rows)
            if deps:
                db.executemany("INSERT INTO deps VALUES (?,?)", deps)
            if self._stream_rows:
                trans += [(tid, 0.0, "STREAMS", "", info) for tid, info in self._stream_rows]
                self._stream_rows = []
            if trans:
                db.executemany("INSERT INTO transitions VALUES (?,?,?,?,?)", trans)
            if logs:
                db.executemany("INSERT INTO logs (task_id, t, level, node, line) "
                               "VALUES (?,?,?,?,?)", logs)
            if nodes:
                db.executemany("INSERT INTO nodes (name, t_join, slots, info) VALUES (?,?,?,?)",
                               nodes)
            # A name may join again (a node back under its old name): a leave or a Slurm
            # state belongs to that name's latest join, not to the rows of earlier ones.
            if lost:
                db.executemany("UPDATE nodes SET t_lost=?, reason=? WHERE rowid="
                               "(SELECT MAX(rowid) FROM nodes WHERE name=?)", lost)
            if states:
                db.executemany("UPDATE nodes SET reason=COALESCE(reason, '') || ? WHERE rowid="
                               "(SELECT MAX(rowid) FROM nodes WHERE name=?)", states)
            if samples:
                db.executemany("INSERT INTO samples VALUES (?,?,?,?,?,?)", samples)
            if usage:
                db.executemany("INSERT OR REPLACE INTO usage VALUES (?,?,?)", usage)
            if memory:
                db.executemany("INSERT INTO memory VALUES (?,?,?,?,?,?,?,?,?)", memory)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def _row_start(self, tid: int, info: tuple[Any, ...], argv: Any, kwargs: Any, refs: Any,
                   dep_ids: Any, deps: list[tuple[int, int]]) -> tuple[int, str]:
        """A new task's spec row id and parameter text; its dependencies go to ``deps``."""
        func, constraints, names, name = info             # wire._spec_info
        sid = self._specs.get((func, constraints, name))
        if sid is None:
            sid = self._spec_id(info)
        if dep_ids:
            deps.extend([(tid, d) for d in dep_ids])
        if refs and sid in self._streams:
            self._stream_rows.append((tid, json.dumps(stream_paths(names, refs,
                                                                   self._streams[sid]))))
        return sid, params_text(names, argv, kwargs, ref_summary(refs) if refs else None)

    def _spec_id(self, info: tuple[Any, ...], name: str | None = None) -> int:
        """The ``specs`` row of a task function (func, constraints, names, name): wire.py."""
        func, constraints, _, own_name = info
        key = (func, constraints, name or own_name)
        sid = self._specs.get(key)
        if sid is None:
            sid = self._specs[key] = len(self._specs) + 1
            self._new_specs.append((sid, key[2], func, constraints))
            if '"streams"' in constraints:
                self._streams[sid] = json.loads(constraints)["streams"]
        return sid

    def _done_rows(self, rows: list[Any], new: dict[int, list[Any]], changes: dict[int, dict[str, Any]],
                   logs: list[tuple[Any, ...]]) -> None:
        """Tasks that ended well, from the bus's rows (after this batch's other events)."""
        nlogs = self._nlogs
        for tid, t0, t1, tdisp, node, att, _name, code in rows:
            row = new.get(tid)
            n = nlogs.pop(tid, 0) if nlogs else 0
            if row is not None:
                row[_NODE] = node
                row[_STATE] = "DONE"
                row[_T_START] = t0 or None
                row[_T_END] = t1
                row[_ATTEMPTS] = att
                if tdisp:
                    row[_T_DISPATCH] = tdisp
                if code is not None:
                    row[_EXIT] = code
            else:
                ch = {"state": "DONE", "t_end": t1, "attempts": att}
                if code is not None:
                    ch["exit_code"] = code
                if node:
                    ch["node"] = node
                if t0:
                    ch["t_start"] = t0
                if tdisp:
                    ch["t_dispatch"] = tdisp
                old = changes.get(tid)
                if old is None:
                    changes[tid] = ch
                else:
                    old.update(ch)
            if n > LOG_CAP:
                logs.append((tid, t1, "RAW", node, f"[taskflow] {n - LOG_CAP} more lines "
                             f"not stored (journal cap {LOG_CAP} lines per task)"))

    def close_run(self, t_end: float, state: str, counts: dict[str, int]) -> None:
        """Mark the run finished, failed or interrupted and close the database.

        An interrupted run's tasks that did not end are marked INTERRUPTED.
        """
        self.write(([], [], [], []), final=True)
        c = counts
        try:
            if state == "interrupted":
                self.db.execute("UPDATE task_rows SET state='INTERRUPTED' WHERE state NOT IN "
                                "('DONE', 'FAILED', 'CANCELLED', 'INTERRUPTED')")
            self.db.execute(
                "UPDATE run SET t_end=?, state=?, n_submitted=?, n_done=?, n_failed=?, "
                "n_cancelled=?, n_retries=? WHERE run_id=?",
                (t_end, state, c.get("submitted"), c.get("done"), c.get("failed"),
                 c.get("cancelled"), c.get("retries"), self.run_id))
        finally:
            self.db.close()


class JournalWriter:
    """The runtime's side: subscribes to the bus, feeds a :class:`JournalDB`.

    ``mode`` "process" (default) writes from a child process, "thread" from
    the bus thread; ``$TASKFLOW_JOURNAL`` sets the default.
    """

    def __init__(self, run_dir: str, row: tuple[Any, ...], bus: EventBus, mode: str | None = None
                 ) -> None:
        _private(run_dir, os.path.join(run_dir, JOURNAL_NAME))
        self.path = os.path.join(run_dir, JOURNAL_NAME)
        self.mode = mode or os.environ.get("TASKFLOW_JOURNAL", "process")
        self._lock = threading.Lock()
        from .wire import EventPickler
        self._pickler = EventPickler()
        self.closed = False
        self.proc: Any = None
        self.db: JournalDB | None = None
        self._row = row
        if self.mode == "process":
            from .child import spawn
            JournalDB(self.path, self._row).db.close()   # tables exist before anyone reads
            self.proc = spawn(self.path, self._row)
        else:
            self.db = JournalDB(self.path, self._row)
        bus.subscribe(self.on_events, rows=True)

    def on_events(self, batch: RowBatch) -> None:
        """From the bus thread: one delivery (``runtime.events.RowBatch``)."""
        with self._lock:
            if self.closed:
                return
            body = self._pickler.dumps(("events", batch))
            if self.proc is not None:
                from .child import send_body
                try:
                    send_body(self.proc, body)
                    return
                except RuntimeError as exc:     # carry on in this process
                    log.warning("%s; writing the journal from the master from now on", exc)
                    self.proc = None
                    self.db = JournalDB(self.path, self._row)
            assert self.db is not None      # thread mode, or the fallback above
            _, batch = pickle.loads(body)
            self.db.write(batch)

    def close(self, t_end: float, state: str, c: dict[str, int]) -> None:
        """Mark the run ``state`` with its counts (after the bus delivered everything)."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            if self.proc is not None:
                from .child import finish
                finish(self.proc, (t_end, state, c))
            else:
                assert self.db is not None      # thread mode, or on_events' fallback
                self.db.close_run(t_end, state, c)
