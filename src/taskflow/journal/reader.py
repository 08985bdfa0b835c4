"""Reading journals: the runs under a root, one run's tasks, logs, nodes.

Readers open the database while the run may still write it (WAL mode), so
``taskflow status``, ``taskflow logs --follow`` and the monitor work live.
A journal that cannot be read (damaged, not a database, a full disk under its
shared-memory file) raises :class:`~taskflow.errors.RecordDamaged`, one line
naming the file and where the rest of the run is: every command says that,
not a traceback.
"""
from __future__ import annotations

import json
import os
import socket
import sqlite3
from typing import Any, Iterator

from ..errors import RecordDamaged
from ..errors import RunNotFound as RunNotFound      # re-exported: the reader raises it
from . import endfile
from .dbfile import damaged as damaged               # re-exported: commands raise it
from .noderecords import NodeRecords
from .root import runs_root as runs_root            # re-exported: the journal package names it
from .schema import JOURNAL_NAME

STATES = ("SUBMITTED", "READY", "DISPATCHED", "RUNNING", "DONE", "FAILED", "CANCELLED",
          "INTERRUPTED")


def run_ids(root: str | None = None) -> list[str]:
    """Run ids with a journal, oldest first."""
    r = runs_root(root)
    if not os.path.isdir(r):
        return []
    ids = [d for d in os.listdir(r) if os.path.isfile(os.path.join(r, d, JOURNAL_NAME))]
    # ids start with the start time to the second; within a second the journal's age decides
    return sorted(ids, key=lambda d: (d[:15], os.path.getmtime(os.path.join(r, d, JOURNAL_NAME)), d))


def resolve_run(run: str | None = None, root: str | None = None) -> str:
    """The directory of run ``run`` (an id, a unique prefix, a path; None = latest)."""
    if run and os.path.isfile(os.path.join(run, JOURNAL_NAME)):
        return os.path.abspath(run)
    ids = run_ids(root)
    where = runs_root(root)
    if not ids:
        raise RunNotFound(f"no runs with a journal under {where} (use --run-dir or "
                          f"TASKFLOW_RUN_DIR to point at another place)")
    if not run or run == "latest":
        return os.path.join(where, ids[-1])
    hits = [i for i in ids if i == run] or [i for i in ids if i.startswith(run)] or \
        [i for i in ids if run in i]
    if len(hits) != 1:
        what = "no run" if not hits else f"{len(hits)} runs"
        raise RunNotFound(f"{what} under {where} match {run!r}; `taskflow runs` lists them")
    return os.path.join(where, hits[0])


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# the transitions rows that hold what a task was given, by the key task() gives them
_KEPT = {"STREAMS": "streams", "FILES": "files", "VALUES": "values"}


class Journal(NodeRecords):
    """A read view of one run's ``journal.db``: its run, tasks and logs here, its nodes' records
    in :class:`~.noderecords.NodeRecords`, the file in :class:`~.dbfile.JournalFile`."""

    def state_key(self) -> tuple[int, str]:
        """What changes when the journal's content or the run's state does: equal keys of one
        connection, equal answers (:meth:`data_version` and :meth:`run`'s state, which also
        turns to interrupted when the master died without a commit)."""
        return self.data_version(), str(self.run().get("state"))

    def each_task(self) -> Iterator[dict[str, Any]]:
        """Every task by id, streamed, with what was measured on its node (``cpu``, ``rss``,
        ``rchar``, ``wchar``: None when it was not measured)."""
        cols = "t.id, t.name, t.node, t.state, t.t_submit, t.t_start, t.t_end, t.params, " \
               "t.constraints, u.cpu, u.rss"
        try:
            self.db.execute("SELECT rchar, wchar FROM usage LIMIT 0")
            io = ", u.rchar, u.wchar"
        except sqlite3.OperationalError:        # a journal from before the bytes were kept
            io = ", NULL AS rchar, NULL AS wchar"
        for r in self._each(f"SELECT {cols}{io} FROM tasks t LEFT JOIN usage u ON "
                            "u.task_id = t.id ORDER BY t.id"):
            yield dict(r)

    def each_ended(self) -> Iterator[dict[str, Any]]:
        """Every task that ended, by id, streamed: its row with what was measured on its
        node (``cpu``, ``rss``, ``rchar``, ``wchar``, ``rss_how``: None where not
        measured, or not kept by the journal's version), the task that called it
        (``parent``) and whether a resumed run took it from the earlier run
        (``restored``)."""
        have = {r[1] for r in self._rows("PRAGMA table_info(usage)")}
        cols = ", ".join(f"u.{c}" if c in have else f"NULL AS {c}"
                         for c in ("cpu", "rss", "rchar", "wchar", "rss_how"))
        for r in self._each(
                "SELECT t.id, t.name, t.state, t.node, t.t_submit, t.t_start, t.t_end, "
                f"t.attempts, t.exit_code, t.error, t.constraints, {cols}, "
                "c.parent_id AS parent, EXISTS (SELECT 1 FROM transitions x WHERE "
                "x.task_id = t.id AND x.state = 'RESTORED') AS restored FROM tasks t "
                "LEFT JOIN usage u ON u.task_id = t.id LEFT JOIN children c ON "
                "c.child_id = t.id WHERE t.state IN ('DONE', 'FAILED', 'CANCELLED', "
                "'INTERRUPTED') ORDER BY t.id"):
            yield dict(r)

    def each_retry(self) -> Iterator[tuple[int, float, str, str, dict[str, Any]]]:
        """(task id, time, node, why, the attempt) of each attempt that ran again, by task
        id and time, streamed (:meth:`retries` holds them in memory). The attempt: its
        ``start``, ``end``, ``cpu``, ``rss``, ``rss_how``, ``rchar``, ``wchar`` where the
        journal kept them (``ATTEMPT`` rows; {} for a hand-back or an older journal)."""
        last: tuple[int, float, str, str] | None = None
        for tid, t, state, node, info in self._each(
                "SELECT task_id, t, state, node, info FROM transitions WHERE state IN "
                "('RETRY', 'ATTEMPT') ORDER BY task_id, t, rowid"):
            if state == "RETRY":
                if last is not None:
                    yield (*last, {})
                last = (tid, t, node or "-", info or "")
                continue
            try:
                attempt = json.loads(info or "{}")
            except ValueError:
                attempt = {}
            if last is not None and last[0] == tid and attempt.get("retry") == last[1]:
                yield (*last, attempt if isinstance(attempt, dict) else {})
                last = None
        if last is not None:
            yield (*last, {})

    def each_dep(self) -> Iterator[tuple[int, int]]:
        """(task, one task whose output it reads), streamed, by task id."""
        for t, d in self._each("SELECT task_id, dep_id FROM deps ORDER BY task_id, dep_id"):
            yield t, d

    def span(self) -> tuple[float | None, float | None]:
        """(first submission, last end) of the run's tasks (None when there is none)."""
        rows = self._rows("SELECT MIN(NULLIF(t_submit, 0)), MAX(NULLIF(t_end, 0)) FROM tasks")
        return (rows[0][0], rows[0][1]) if rows else (None, None)

    # -- the run ----------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        rows = self._all("SELECT * FROM run")
        if not rows:
            return {"run_id": os.path.basename(self.run_dir), "state": "unknown"}
        r = rows[0]
        r.setdefault("reason", None)        # (journals of earlier versions have no reason)
        kept = endfile.read(self.run_dir) if r["state"] == "running" else None
        if kept is not None:                # its end would not go into the journal
            r.update(kept)
        elif r["state"] == "running" and r.get("hostname") == socket.gethostname() \
                and not _pid_alive(r.get("pid")):
            r["state"] = "interrupted"
            r["reason"] = (f"its master process (pid {r.get('pid')}) ended without closing "
                           f"the run: it was killed (SIGKILL, out of memory) or crashed")
        r["run_dir"] = self.run_dir
        return r

    def counts(self) -> dict[str, int]:
        c = {s: 0 for s in STATES}
        for state, n in self._rows("SELECT state, COUNT(*) FROM tasks GROUP BY state"):
            c[state] = n
        c["total"] = sum(c[s] for s in STATES)
        # runs beyond the first (a task placed again before it started is no retry)
        c["retries"] = sum(r[0] or 0 for r in self._rows(
            "SELECT SUM(attempts - 1) FROM tasks WHERE attempts > 1"))
        return c

    def counts_by_name(self) -> dict[str, dict[str, int]]:
        out: dict[str, dict[str, int]] = {}
        for name, state, n in self._rows(
                "SELECT name, state, COUNT(*) FROM tasks GROUP BY name, state"):
            out.setdefault(name, {})[state] = n
        return out

    # -- tasks --------------------------------------------------------------------
    def tasks(self, state: str | None = None, limit: int | None = None, query: str | None = None,
              offset: int = 0, since_id: int | None = None) -> list[dict[str, Any]]:
        """Task rows by id; ``query`` matches the id, name, node or parameters.

        ``since_id``: only tasks with ``id >= since_id`` (what may still change).
        """
        sql = "SELECT id, name, func, params, constraints, node, state, t_submit, t_dispatch, " \
              "t_start, t_end, attempts, exit_code, error FROM tasks"
        where: list[str] = []
        args: list[Any] = []
        if state:
            where.append("state=?")
            args.append(state.upper())
        if since_id is not None:
            where.append("id>=?")
            args.append(since_id)
        if query:
            q = query.strip()
            like = "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            cond = "(name LIKE ? ESCAPE '\\' OR node LIKE ? ESCAPE '\\' OR params LIKE ? ESCAPE '\\'"
            args += [like, like, like]
            if q.lstrip("#").isdigit():
                cond += " OR id=?"
                args.append(int(q.lstrip("#")))
            where.append(cond + ")")
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id"
        if limit:
            sql += f" LIMIT {int(limit)}"
            if offset:
                sql += f" OFFSET {int(offset)}"
        return self._all(sql, tuple(args))

    def resume_counts(self) -> tuple[dict[str, dict[str, int]], int]:
        """A resumed run: per task name, why calls ran again (name -> reason -> count), and
        how many calls were restored from the earlier run."""
        reruns: dict[str, dict[str, int]] = {}
        for name, why, n in self._rows(
                "SELECT t.name, x.info, COUNT(*) FROM transitions x JOIN tasks t ON t.id = "
                "x.task_id WHERE x.state = 'RERUN' GROUP BY t.name, x.info"):
            reruns.setdefault(name, {})[why or "?"] = n
        restored = self._rows("SELECT COUNT(*) FROM transitions WHERE state = 'RESTORED'")
        return reruns, int(restored[0][0]) if restored else 0

    def reused_by_name(self) -> dict[str, int]:
        """A resumed run: per task name, the calls taken from the earlier run (restored
        from its records, or adopted from its agents) rather than run here."""
        return {name: int(n) for name, n in self._rows(
            "SELECT t.name, COUNT(*) FROM transitions x JOIN tasks t ON t.id = x.task_id "
            "WHERE x.state IN ('RESTORED', 'ADOPTED') GROUP BY t.name")}

    def each_rerun(self) -> Iterator[tuple[int, str, str, str]]:
        """A resumed run: (task id, name, parameters, why) of each call that ran again."""
        for r in self._each("SELECT t.id, t.name, t.params, x.info FROM transitions x JOIN "
                            "tasks t ON t.id = x.task_id WHERE x.state = 'RERUN' ORDER BY t.id"):
            yield int(r[0]), r[1], r[2] or "", r[3] or "?"

    def name_edges(self) -> list[tuple[str, str]]:
        """(producer name, consumer name) pairs: the graph of task names."""
        return [(a, b) for a, b in self._rows(
            "SELECT DISTINCT a.name, b.name FROM deps d JOIN tasks a ON a.id = d.dep_id "
            "JOIN tasks b ON b.id = d.task_id")]

    def data_version(self) -> int:
        """Changes when another connection (the writer) commits: nothing new while equal."""
        try:
            return int(self.db.execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.DatabaseError as exc:
            raise damaged(self.path, exc) from None

    def tasks_page(self, state: str | None = None, name: str | None = None, limit: int = 100,
                   offset: int = 0) -> tuple[list[dict[str, Any]], int]:
        """(tasks ordered by id, filtered by state and exact name; the number that match)."""
        where, args = [], []
        if state:
            where.append("state=?")
            args.append(state.upper())
        if name:
            where.append("name=?")
            args.append(name)
        cond = (" WHERE " + " AND ".join(where)) if where else ""
        total = sum(r[0] for r in self._rows(f"SELECT COUNT(*) FROM tasks{cond}", tuple(args)))
        rows = self._all("SELECT id, name, node, state, t_submit, t_dispatch, t_start, t_end, "
                         f"attempts, exit_code, error FROM tasks{cond} ORDER BY id LIMIT ? "
                         f"OFFSET ?", (*args, int(limit), int(offset)))
        return rows, total

    def task_with_params(self, like: str) -> int | None:
        """The last task whose parameters' text is LIKE ``like`` (SQL pattern), or None."""
        rows = self._all("SELECT id FROM task_rows WHERE params LIKE ? ORDER BY id DESC "
                         "LIMIT 1", (like,))
        return int(rows[0]["id"]) if rows else None

    def task(self, tid: int) -> dict[str, Any] | None:
        rows = self._all("SELECT * FROM tasks WHERE id=?", (tid,))
        if not rows:
            return None
        t = rows[0]
        t["deps"] = self.deps_of(tid)
        tr = self._all("SELECT t, state, node, info FROM transitions WHERE task_id=?", (tid,))
        t["streams"] = {}       # a program's stdin/stdout/stderr: {stream: [parameter, path]}
        t["files"] = []         # [[parameter, in|out|inout, path, is a directory]]
        t["values"] = []        # kept by digest: [[parameter, type, length, bytes, sha256]]
        tr = [x for x in tr if x["state"] != "ATTEMPT"]     # (their figures: each_retry)
        for x in [x for x in tr if x["state"] in _KEPT]:
            tr.remove(x)
            try:
                t[_KEPT[x["state"]]] = json.loads(x["info"] or "{}")
            except ValueError:
                pass
        t["log_files"] = self.log_files(tid)
        u = self.usage_of(tid)
        t["cpu"], t["peak_rss"], t["read_bytes"], t["written_bytes"] = u or (None,) * 4
        for col, state in (("t_submit", "SUBMITTED"), ("t_dispatch", "DISPATCHED"),
                           ("t_start", "RUNNING"), ("t_end", t["state"])):
            if t.get(col) and (col != "t_end" or t["state"] in ("DONE", "FAILED", "CANCELLED",
                                                                  "INTERRUPTED")):
                tr.append({"t": t[col], "state": state, "info": None,
                           "node": "" if col == "t_submit" else t["node"]})
        t["transitions"] = sorted(tr, key=lambda x: x["t"])
        return t

    def each_task_record(self) -> Iterator[dict[str, Any]]:
        """:meth:`each_task` with each task's function, attempts, exit code and error's line."""
        try:
            self.db.execute("SELECT rchar, wchar FROM usage LIMIT 0")
            io = "u.rchar, u.wchar"
        except sqlite3.OperationalError:        # a journal from before the bytes were kept
            io = "NULL AS rchar, NULL AS wchar"
        for r in self._each("SELECT t.id, t.name, t.func, t.params, t.constraints, t.node, "
                            "t.state, t.t_submit, t.t_start, t.t_end, t.attempts, t.exit_code, "
                            f"t.error, u.cpu, u.rss, {io} FROM tasks t LEFT JOIN usage u "
                            "ON u.task_id = t.id ORDER BY t.id"):
            yield dict(r)

    def each_files(self) -> Iterator[tuple[int, list[list[Any]]]]:
        """(task, its :meth:`task` ``files``) of every task that read or wrote a file, by id."""
        for tid, info in self._each("SELECT task_id, info FROM transitions WHERE state='FILES' "
                                    "ORDER BY task_id"):
            try:
                yield int(tid), json.loads(info or "[]")
            except ValueError:
                continue

    def each_values(self) -> Iterator[tuple[int, list[list[Any]]]]:
        """(task, its :meth:`task` ``values``) of every task passed a value the journal keeps
        by digest, by id (none in a journal from before they were kept)."""
        for tid, info in self._each("SELECT task_id, info FROM transitions WHERE "
                                    "state='VALUES' ORDER BY task_id"):
            try:
                yield int(tid), json.loads(info or "[]")
            except ValueError:
                continue

    def log_files(self, tid: int) -> list[str]:
        """Files a program task's output was copied to (``jobs/job<N>.out`` / ``.err``)."""
        base = os.path.join(self.run_dir, "jobs", f"job{tid}")
        return [base + ext for ext in (".out", ".err") if os.path.isfile(base + ext)]

    def deps_of(self, tid: int) -> list[int]:
        return [r[0] for r in self._rows("SELECT dep_id FROM deps WHERE task_id=?", (tid,))]

    def edges(self) -> list[tuple[int, int]]:
        """(producer, consumer) pairs."""
        return [(d, t) for t, d in self._rows("SELECT task_id, dep_id FROM deps")]

    def children(self, parent: int | None = None) -> list[tuple[int, int]]:
        """(parent, child) pairs: tasks a running task called (all, or ``parent``'s)."""
        if parent is None:
            return [(p, c) for p, c in self._rows("SELECT parent_id, child_id FROM children")]
        return [(parent, c) for (c,) in self._rows(
            "SELECT child_id FROM children WHERE parent_id=?", (parent,))]

    def parent_of(self, tid: int) -> int | None:
        """The task that called ``tid`` while it ran (None: the program did)."""
        rows = self._rows("SELECT parent_id FROM children WHERE child_id=?", (tid,))
        return int(rows[0][0]) if rows else None

    def nested_counts(self) -> tuple[int, int]:
        """(calls made by running tasks, how many tasks made them)."""
        rows = self._rows("SELECT COUNT(*), COUNT(DISTINCT parent_id) FROM children")
        return (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)

    def placements(self) -> dict[int, list[tuple[str, int]]]:
        """Tasks that held more than one slot: task id -> [(node, slots)] of its last run.

        From the ``PLACED`` transitions (multi-slot tasks of functions not known
        to be short); other tasks held ``computing_units`` slots of their node
        (:meth:`slots_of`).
        """
        out: dict[int, list[tuple[str, int]]] = {}
        for tid, info in self._rows("SELECT task_id, info FROM transitions WHERE state='PLACED' "
                                    "ORDER BY rowid"):
            try:
                out[tid] = [(str(n), int(k)) for n, k in json.loads(info)]
            except (TypeError, ValueError):
                continue
        return out

    def usage(self) -> dict[int, tuple[float, int, int | None, int | None]]:
        """Task id -> (CPU seconds, peak resident bytes, bytes read, bytes written) of the
        tasks measured on their node (the bytes None where not known)."""
        try:
            rows = self._rows("SELECT task_id, cpu, rss, rchar, wchar FROM usage")
        except sqlite3.OperationalError:          # a journal from before the bytes were kept
            rows = [(*r, None, None) for r in self._rows("SELECT task_id, cpu, rss FROM usage")]
        return {tid: (cpu, rss, rd, wr) for tid, cpu, rss, rd, wr in rows}

    def usage_of(self, tid: int) -> tuple[float, int, int | None, int | None] | None:
        """One task's :meth:`usage` (None when it was not measured)."""
        try:
            u = self._rows("SELECT cpu, rss, rchar, wchar FROM usage WHERE task_id=?", (tid,))
        except sqlite3.OperationalError:
            u = [(*r, None, None) for r in self._rows(
                "SELECT cpu, rss FROM usage WHERE task_id=?", (tid,))]
        return tuple(u[0]) if u else None

    def failed(self) -> list[dict[str, Any]]:
        return self._all("SELECT id, name, node, attempts, error FROM tasks "
                         "WHERE state='FAILED' ORDER BY id")

    def names_of(self, ids: list[int]) -> dict[int, str]:
        """Task id -> function name, for these ids."""
        out: dict[int, str] = {}
        for i in range(0, len(ids), 500):
            part = ids[i:i + 500]
            marks = ",".join("?" * len(part))
            out.update(self._rows(f"SELECT id, name FROM tasks WHERE id IN ({marks})",
                                  tuple(part)))
        return out

    def retries(self, task: int | None = None,
                limit: int | None = None) -> dict[int, list[tuple[float, str, str]]]:
        """Why tasks ran again: task id -> ``(time, node, why)`` per retry, in order (a
        failure, a worker that died, a node lost; ``limit``: of the first tasks only)."""
        sql = "SELECT task_id, t, node, info FROM transitions WHERE state='RETRY'"
        args: tuple[Any, ...] = ()
        if task is not None:
            sql += " AND task_id=?"
            args = (task,)
        elif limit is not None:
            sql += (" AND task_id IN (SELECT DISTINCT task_id FROM transitions WHERE "
                    "state='RETRY' ORDER BY task_id LIMIT ?)")
            args = (limit,)
        out: dict[int, list[tuple[float, str, str]]] = {}
        for tid, t, node, why in self._rows(sql + " ORDER BY task_id, t", args):
            out.setdefault(tid, []).append((t, node or "-", why or ""))
        return out

    # -- logs -----------------------------------------------------------------------
    def logs(self, task: int | None = None, levels: list[str] | None = None,
             after: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        """Log lines (``id`` increases; pass the last one as ``after`` to follow)."""
        sql = "SELECT id, task_id, t, level, node, line FROM logs WHERE id>?"
        args: list[Any] = [after]
        if task is not None:
            sql += " AND task_id=?"
            args.append(task)
        if levels:
            sql += f" AND level IN ({','.join('?' * len(levels))})"
            args.extend(x.upper() for x in levels)
        sql += " ORDER BY id"
        if limit:
            sql += f" LIMIT {int(limit)}"
        return self._all(sql, tuple(args))

def list_runs(root: str | None = None) -> list[dict[str, Any]]:
    """Every run under ``root`` with its state and task counts, oldest first."""
    out = []
    where = runs_root(root)
    for rid in run_ids(root):
        try:
            with Journal(os.path.join(where, rid)) as j:
                r = j.run()
                r["counts"] = j.counts()
        except (sqlite3.Error, RunNotFound, RecordDamaged) as exc:
            r = {"run_id": rid, "state": "damaged", "reason": str(exc), "counts": {}}
        out.append(r)
    return out


def slots_of(task: dict[str, Any], placements: dict[int, list[tuple[str, int]]]
             ) -> list[tuple[str, int]]:
    """[(node, slots)] that ``task`` (a row of :meth:`Journal.tasks`) held while it ran."""
    held = placements.get(task["id"])
    if held:
        return held
    units = 1
    try:
        units = int(json.loads(task.get("constraints") or "{}").get("computing_units") or 1)
    except (TypeError, ValueError, AttributeError):
        pass
    return [(task.get("node") or "?", max(units, 1))]
