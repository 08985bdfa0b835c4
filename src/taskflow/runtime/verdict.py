"""How a run ended, in one line: what the journal, the summary and ``taskflow status`` say.

A run is ``finished`` only when its script ended well and no task failed; it
is ``failed`` when a task failed, when the script raised or exited with a
non-zero status (``sys.exit(3)``), or when its record could not be kept (a
journal write that failed); ``interrupted`` when a signal stopped it. The
reason is one line: "the script raised RuntimeError at crash.py:6", "the
script exited with status 3", "task bad (id 2) failed: ValueError: nope".
"""
from __future__ import annotations

import os
import re
import traceback
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..errors import TaskError

_WHERE = re.compile(r'\s*File "([^"]+)", line (\d+), in ')


def exit_status(exc: SystemExit) -> int:
    """The process status ``raise SystemExit(code)`` asks for, as Python itself exits."""
    code = exc.code
    if code is None:
        return 0
    return int(code) if isinstance(code, int) else 1    # sys.exit(True) (unittest.main's): 1


def status_of(state: str | None, reason: str | None) -> int | None:
    """The status ``taskflow run`` exited with, read back from the run's end as the journal
    holds it (the reasons are this module's words); None where they do not tell it."""
    if state == "finished":
        return 0
    reason = reason or ""
    if state == "interrupted":
        import signal
        name = reason.split()[0] if reason else ""
        if name == "KeyboardInterrupt":
            return 128 + signal.SIGINT
        try:
            return 128 + signal.Signals[name]
        except KeyError:
            return None
    if state != "failed":
        return None
    m = re.match(r"the (?:script exited with status|program stopped the run with code) (\d+)$",
                 reason)
    if m:
        return int(m.group(1))
    return 1        # a task failed, the script raised, the record could not be kept


def script_reason(exc: BaseException) -> str | None:
    """Why a script that ended with ``exc`` failed the run (None: it ended well)."""
    if isinstance(exc, SystemExit):
        status = exit_status(exc)
        if status == 0:
            return None
        if isinstance(exc.code, int):
            return f"the script exited with status {status}"
        return f"the script exited: {_first_line(exc.code)}"
    where = raised_at(exc)
    return f"the script raised {type(exc).__name__}{' at ' + where if where else ''}"


def raised_at(exc: BaseException) -> str:
    """``file:line`` of the innermost frame of the user's code in ``exc``'s traceback
    (taskflow's, runpy's and cloudpickle's frames are not the user's); '' if none."""
    from ..console.frames import user_frames
    frames = user_frames("".join(traceback.format_tb(exc.__traceback__)))
    for line in reversed(frames):
        m = _WHERE.match(line)
        if m:
            path = m.group(1)
            try:
                shown = os.path.relpath(path) if os.path.isabs(path) else path
            except ValueError:              # another drive (Windows)
                shown = path
            if shown.startswith(".." + os.sep):
                shown = path
            return f"{shown}:{m.group(2)}"
    return ""


def tasks_reason(failures: list[TaskError]) -> str:
    """The failed tasks, in one line: the first one's error, and how many more."""
    from ..errors import TaskCancelled
    errs = [e for e in failures if not isinstance(e, TaskCancelled)] or failures
    first = errs[0]
    text = _first_line(str(first))
    m = re.match(r"task (.*?) \(id (\d+)\) failed on node \S+(?: after \d+ attempts?)?: (.*)",
                 text)
    if m:
        text = f"task {m.group(1)} (id {m.group(2)}) failed: {m.group(3)}"
    more = len(errs) - 1
    return text + (f" (and {more} more failed task{'s' if more != 1 else ''})" if more else "")


def _first_line(obj: object) -> str:
    try:
        text = str(obj)
    except Exception:  # noqa: BLE001 - a user's __str__ may raise
        text = f"<{type(obj).__name__}>"
    line = text.strip().split("\n", 1)[0]
    return line if len(line) <= 300 else line[:297] + "..."
