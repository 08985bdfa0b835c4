"""A file the script could not open that a task was given as a plain value, not a file.

The classic first mistake: ``@task() def write(path): open(path, "w")...``
called with ``write("out.txt")`` and the script opening ``out.txt`` next.
taskflow sees a string, not a file: nothing waits for the task, so the
script's ``open`` fails (or, on a node without a shared file system, the file
is written there and never comes back). The error the script gets is a bare
``FileNotFoundError``; this finds the task in the run's journal (its
parameters in short form) and names it, with the fix. Read only when the
script failed that way, after the run stopped: nothing is added to a call.
"""
from __future__ import annotations

import os
import re

from ..journal.text import short

LIMIT = 3       # tasks named


def _needles(path: str, cwd: str) -> list[str]:
    """How the path can appear in a task's parameters text (journal.text.short)."""
    forms = {path, os.path.abspath(os.path.join(cwd, path))}
    try:
        forms.add(os.path.relpath(os.path.abspath(os.path.join(cwd, path)), cwd))
    except ValueError:
        pass
    out = []
    for p in forms:
        r = short(p)
        out.append(r[:-3] if r.endswith("...") else r)     # a cut repr: its start
    return out


def writers(run_dir: str, path: str, cwd: str | None = None) -> list[tuple[int, str, str, str]]:
    """Tasks of the run given ``path`` as a plain value: (id, name, parameter, node)."""
    from ..journal.reader import Journal
    cwd = cwd or os.getcwd()
    out: list[tuple[int, str, str, str]] = []
    try:
        with Journal(run_dir) as j:
            for needle in _needles(path, cwd):
                rows = j.db.execute(
                    "SELECT id, name, params, node FROM tasks WHERE instr(params, ?) > 0 "
                    "ORDER BY id LIMIT ?", (needle, LIMIT)).fetchall()
                for tid, name, params, node in rows:
                    m = re.search(r"(\w+)=" + re.escape(needle), params or "")
                    if m and all(tid != o[0] for o in out):
                        out.append((tid, name, m.group(1), node or "-"))
    except Exception:  # noqa: BLE001 - a hint is never worth an error of its own
        return []
    return sorted(out)[:LIMIT]


def hint(run_dir: str | None, exc: BaseException) -> list[str]:
    """Lines naming the tasks that were given the missing file as a plain value ([] if
    ``exc`` is no missing file, or no task was)."""
    if not run_dir or not isinstance(exc, FileNotFoundError) or not exc.filename \
            or not isinstance(exc.filename, str):
        return []
    path = exc.filename
    found = writers(run_dir, path)
    if not found:
        return []
    tid, name, param, node = found[0]
    others = "".join(f", task {n} (id {i}) parameter {p}" for i, n, p, _ in found[1:])
    if os.path.exists(path):
        now = "it exists now: the task wrote it after the script looked"
    else:
        now = (f"it is not here now either: the task ran on node {node}, which may not share "
               f"this file system, or it did not write it")
    return [f"{path} was given to task {name} (id {tid}) as a plain value (parameter {param})"
            f"{others}, not as a file: nothing waited for the task to write it",
            f"  {now}",
            f"  fix: declare it, @task({param}=FILE_OUT) (FILE_INOUT if the task also reads "
            f"it), and read it with taskflow.open({path!r}) or after wait_on_file({path!r})"]
