"""What the report says first: the run (its command, times, state) and its failures.

As Nextflow's report opens: the script and its arguments, the command line,
where and by whom it ran, when it started and ended, its exit status and
the counts by state; then each failed task with its name and id, node,
attempts, the error, the frames of the user's code in its traceback and the
command that prints its output. The run's state and the reason for it are the
journal's (decided by the run, not here).
"""
from __future__ import annotations

import json
import os
import re
import shlex
from typing import Any

from ..runtime.recovery.reasons import summary_lines
from ..journal.reader import Journal
from ..console.frames import fold_traceback, user_frames

FAILURES_DETAILED = 5      # failed tasks shown with their frames; then one line each
FAILURES_LISTED = 200      # ... up to this many, then a count
_HEAD = re.compile(r"task .* \(id \d+\) failed on node \S+(?: after \d+ attempts?)?: ")


def script_of(argv: list[str]) -> tuple[str | None, list[str]]:
    """The script and its arguments in a run's command line (None: not a script's run).

    ``taskflow run [options] script.py args``, ``python script.py args`` (argv
    starts with the script) or a program that started a runtime itself.
    """
    if not argv:
        return None, []
    if argv[0].endswith(".py") and os.path.basename(argv[0]) != "__main__.py":
        return argv[0], argv[1:]
    if "run" in argv[1:2]:
        for i, a in enumerate(argv[2:], 2):
            if a.endswith(".py") and not a.startswith("-"):
                return a, argv[i + 1:]
    return None, argv[1:]


def _owner(path: str) -> str | None:
    try:
        import pwd
        return pwd.getpwuid(os.stat(path).st_uid).pw_name
    except (ImportError, KeyError, OSError):
        return None


def exit_status(run: dict[str, Any]) -> str:
    """The run's exit status as the journal knows it."""
    for key in ("exit_code", "exit_status", "status"):
        if run.get(key) is not None:
            return str(run[key])
    state = run.get("state")
    if state == "running":
        return "- (still running)"
    from ..runtime.verdict import status_of
    status = status_of(state, run.get("reason"))
    if status is not None:
        return str(status)
    return f"non-zero (the run {state})" if state else "-"


def header(j: Journal) -> dict[str, Any]:
    """The run's facts for the report's first lines."""
    run = j.run()
    try:
        argv = [str(a) for a in json.loads(run.get("argv") or "[]")]
    except (TypeError, ValueError):
        argv = []
    script, args = script_of(argv)
    nodes = j.nodes()
    t0, t1 = run.get("t_start"), run.get("t_end")
    return {
        "run_id": run.get("run_id"), "state": run.get("state"),
        "reason": run.get("reason") or run.get("state_reason"),
        "script": script, "args": args, "command": shlex.join(argv) if argv else None,
        "cwd": run.get("cwd"), "user": _owner(j.path), "host": run.get("hostname"),
        "pid": run.get("pid"), "version": run.get("version"), "run_dir": j.run_dir,
        "start": t0, "end": t1, "duration": (t1 - t0) if t0 and t1 else None,
        "exit_status": exit_status(run), "counts": j.counts(),
        "nodes": len(nodes), "slots": sum(int(n.get("slots") or 0) for n in nodes),
        "nested": j.nested_counts(),
        "resumed": resumed_lines(j),
    }


def resumed_lines(j: Journal) -> list[str]:
    """A resumed run: per task name, the calls reused and why the others ran again (the
    lines the run printed at its end); [] for a run that resumed nothing."""
    reruns, _ = j.resume_counts()
    reused = j.reused_by_name()
    return summary_lines(reused, reruns) if reruns or reused else []


def message(t: dict[str, Any]) -> list[str]:
    """A failed task's error in its own words: no header, no hint to the logs, no traceback."""
    text = (t.get("error_full") or t.get("error") or "").split("\n\nRemote traceback", 1)[0]
    lines = [ln for ln in text.splitlines()
             if ln.strip() and not ln.startswith("logs: taskflow logs")]
    if lines:
        lines[0] = _HEAD.sub("", lines[0], count=1)
    return lines or ["(no error recorded)"]


def failures(j: Journal, detailed: int = FAILURES_DETAILED,
             listed: int = FAILURES_LISTED) -> dict[str, Any]:
    """The failed tasks: the first ``detailed`` with their frames, one line for the next,
    and how many more there are."""
    rows = j.failed()
    run_id = j.run().get("run_id")
    out = []
    for i, row in enumerate(rows[:listed]):
        item = {"id": row["id"], "name": row["name"], "node": row["node"],
                "attempts": row["attempts"], "logs": f"taskflow logs {run_id} {row['id']}"}
        if i < detailed:
            t = j.task(row["id"]) or row
            tb = t.get("traceback") or ""
            item.update(message=message(t), frames=user_frames(tb) if tb else [],
                        folded=fold_traceback(tb)[1] if tb else 0,
                        files=t.get("log_files") or [], exit_code=t.get("exit_code"),
                        t_end=t.get("t_end"))
        else:
            item["message"] = message(row)[:1]
        out.append(item)
    retried = j.retries(limit=listed)
    names = j.names_of(list(retried)) if retried else {}
    return {"total": len(rows), "tasks": out,
            "cancelled": j.counts().get("CANCELLED", 0),
            # why tasks ran again (the first ``listed`` tasks that did): id -> [(node, why)]
            "retried": [{"id": tid, "name": names.get(tid, "?"),
                         "tries": [(node, (why or "").split("\n", 1)[0][:300])
                                   for _t, node, why in tries]}
                        for tid, tries in retried.items()]}
