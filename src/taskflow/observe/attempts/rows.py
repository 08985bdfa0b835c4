"""The trace's rows of one run, from its journal: one per task attempt that ended.

The journal keeps a task's last attempt in its row (times, exit code, error)
and ``usage`` (what was measured) and, of each earlier attempt that was run
again, why (its ``RETRY`` transition) and its start, end and measures where
known (its ``ATTEMPT`` transition): those rows say ``RETRIED``. A draining
node's hand-back is no attempt (the task had not started there) and makes no
row.
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterator

from ...journal.changes import HANDED_BACK as HANDED_BACK     # re-exported (live.py)
from ...journal.reader import Journal, slots_of

# constraints keys that are no resource (the rest are: computing_units, memory_size,
# processors and any a newer version declares)
_NOT_RESOURCES = frozenset({"time_out", "on_failure", "priority", "invoker", "streams",
                            "recorded", "hints"})


def resources_asked(constraints: str | None) -> str | None:
    """``computing_units=2;memory_size=4`` from a ``specs.constraints`` JSON."""
    try:
        c = json.loads(constraints or "{}")
    except ValueError:
        return None
    if not isinstance(c, dict):
        return None
    words = [f"{k}={json.dumps(v, separators=(',', ':')) if isinstance(v, (dict, list)) else v}"
             for k, v in c.items() if k not in _NOT_RESOURCES and v is not None]
    return ";".join(words) or None


class _Asked:
    """``resources_asked`` and the slots a task holds, per ``constraints`` text (one per
    task function: a handful in a run, computed once each)."""

    def __init__(self) -> None:
        self.known: dict[str | None, tuple[str | None, int]] = {}

    def __call__(self, constraints: str | None) -> tuple[str | None, int]:
        got = self.known.get(constraints)
        if got is None:
            units = slots_of({"id": 0, "constraints": constraints}, {})[0][1]
            got = (resources_asked(constraints), units)
            if len(self.known) < 10000:
                self.known[constraints] = got
        return got


def resources_given(held: list[tuple[str, int]]) -> str | None:
    return ",".join(f"{node}:{k}" for node, k in held) or None


def measures(row: dict[str, Any], cpu: float | None, rss: int | None, rchar: int | None,
             wchar: int | None, how: str | None) -> None:
    """Fill a row's measured columns (``%cpu`` from ``cpu_time`` and ``realtime``)."""
    row["cpu_time"] = cpu
    real = row.get("realtime")
    row["%cpu"] = round(100.0 * cpu / real, 1) if cpu is not None and real else None
    row["peak_rss"] = rss
    row["peak_rss_measure"] = how if rss is not None else None
    row["rchar"], row["wchar"] = rchar, wchar


def first_line(text: str | None) -> str | None:
    if not text:
        return None
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= 300 else line[:297] + "..."


def trace_rows(j: Journal) -> Iterator[dict[str, Any]]:
    """One dict per ended attempt (keys: :data:`.fields.FIELDS`), by task id, streamed:
    the tasks and their retries are read side by side in id order, so memory holds one
    task's at a time (and the multi-slot placements, :meth:`Journal.placements`)."""
    retries = j.each_retry()
    pending = next(retries, None)
    placed = j.placements()
    asked_by = _Asked()
    jobs = os.path.join(j.run_dir, "jobs")
    try:
        job_files = set(os.listdir(jobs))
    except OSError:
        job_files = set()
    for t in j.each_ended():
        tid = t["id"]
        asked, units = asked_by(t["constraints"])
        base = {"task_id": tid, "name": t["name"], "submit": t["t_submit"] or None,
                "parent": t["parent"], "resources_asked": asked}
        n = 0
        while pending is not None and pending[0] < tid:     # (a task that has not ended)
            pending = next(retries, None)
        while pending is not None and pending[0] == tid:
            _, when, node, why, tried = pending
            pending = next(retries, None)
            if why.startswith(HANDED_BACK):
                continue
            n += 1
            end = tried.get("end") or when
            row = dict(base, status="RETRIED", attempt=n, complete=end, start=tried.get("start"),
                       node=None if node == "-" else node, error=first_line(why))
            row["duration"] = end - t["t_submit"] if t["t_submit"] else None
            if row["start"]:
                row["realtime"] = max(0.0, end - row["start"])
                row["resources_given"] = resources_given(placed.get(tid)
                                                         or [(node, units)])
            measures(row, tried.get("cpu"), tried.get("rss"), tried.get("rchar"),
                     tried.get("wchar"), tried.get("rss_how"))
            yield row
        restored = bool(t["restored"])
        row = dict(base, status="RESTORED" if restored else t["state"],
                   exit=t["exit_code"], node=t["node"] or None, error=first_line(t["error"]))
        ran = not restored and bool(t["t_start"])
        row["attempt"] = max(t["attempts"] or 0, n + 1) if ran else (t["attempts"] or None)
        row["start"] = t["t_start"] if ran else None
        row["complete"] = t["t_end"] or None
        if row["complete"] and row["submit"]:
            row["duration"] = row["complete"] - row["submit"]
        if ran and row["complete"]:
            row["realtime"] = max(0.0, row["complete"] - t["t_start"])
        measures(row, t["cpu"], t["rss"], t["rchar"], t["wchar"], t["rss_how"])
        if ran:
            row["resources_given"] = resources_given(placed.get(tid)
                                                     or [(t["node"] or "?", units)])
        logs = [os.path.join(jobs, f"job{tid}{ext}") for ext in (".out", ".err")
                if f"job{tid}{ext}" in job_files]
        row["log"] = ",".join(logs) or None
        yield row
