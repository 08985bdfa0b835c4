"""The trace's rows of one run, from its journal: one per task attempt that ended.

The journal keeps a task's last attempt whole (times, exit code, error, what
was measured) and, of each earlier attempt that was run again, when it ended,
where and why (its ``RETRY`` transition): those rows say ``RETRIED`` and
leave the rest unknown. (``taskflow run --trace-file`` writes the figures of
every attempt as it ends: :mod:`.live`.) A draining node's hand-back is no
attempt (the task had not started there) and makes no row.
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterator

from ...journal.reader import Journal, slots_of

# constraints keys that are no resource (the rest are: computing_units, memory_size,
# processors and any a newer version declares)
_NOT_RESOURCES = frozenset({"time_out", "on_failure", "priority", "invoker", "streams",
                            "recorded", "hints"})
HANDED_BACK = "handed back by node"      # outcomes.hand_back's reason: not an attempt


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
    """One dict per ended attempt (keys: :data:`.fields.FIELDS`), by task id, streamed."""
    parents = {c: p for p, c in j.children()}
    retried = j.retries()
    restored = j.restored_ids()
    placed = j.placements()
    jobs = os.path.join(j.run_dir, "jobs")
    try:
        job_files = set(os.listdir(jobs))
    except OSError:
        job_files = set()
    for t in j.each_ended():
        tid = t["id"]
        asked = resources_asked(t["constraints"])
        base = {"task_id": tid, "name": t["name"], "submit": t["t_submit"] or None,
                "parent": parents.get(tid), "resources_asked": asked}
        n = 0
        for when, node, why in retried.get(tid, ()):
            if why.startswith(HANDED_BACK):
                continue
            n += 1
            row = dict(base, status="RETRIED", attempt=n, complete=when,
                       node=None if node == "-" else node, error=first_line(why))
            row["duration"] = when - t["t_submit"] if t["t_submit"] else None
            yield row
        row = dict(base, status="RESTORED" if tid in restored else t["state"],
                   exit=t["exit_code"], node=t["node"] or None, error=first_line(t["error"]))
        ran = tid not in restored and bool(t["t_start"])
        row["attempt"] = max(t["attempts"] or 0, n + 1) if ran else (t["attempts"] or None)
        row["start"] = t["t_start"] if ran else None
        row["complete"] = t["t_end"] or None
        if row["complete"] and row["submit"]:
            row["duration"] = row["complete"] - row["submit"]
        if ran and row["complete"]:
            row["realtime"] = max(0.0, row["complete"] - t["t_start"])
        measures(row, t["cpu"], t["rss"], t["rchar"], t["wchar"], t["rss_how"])
        if ran:
            row["resources_given"] = resources_given(slots_of(t, placed))
        logs = [os.path.join(jobs, f"job{tid}{ext}") for ext in (".out", ".err")
                if f"job{tid}{ext}" in job_files]
        row["log"] = ",".join(logs) or None
        yield row
