"""What the end of a run prints about its failures: once, short, pointing to the logs.

For each task that failed (not those cancelled because of it): its name, id
and node, the error, the frames of *the user's* code in its traceback (the
frames of taskflow itself, of runpy and of cloudpickle are folded into one
line), the files its program wrote its output to, and the command that shows
its output. An error the script itself raised is one line when it is a task's
error (the block above says the rest) and its traceback without taskflow's
frames otherwise. The full traceback stays in the journal
(``taskflow logs RUN ID`` prints it).
"""
from __future__ import annotations

import os
import re
import traceback
from typing import TYPE_CHECKING

from ..errors import TaskCancelled, TaskError, taskflow_class
from .frames import FRAME, fold_traceback, user_frames
from .pathhint import hint

if TYPE_CHECKING:
    from .view import RunView

DETAILED = 5            # failures shown in full; the rest get one line each
ONE_LINE = 20           # ... up to this many, then a count

def _what(err: TaskError) -> list[str]:
    """The error's own words: its message without the header, the hint and the traceback."""
    text = str(err).split("\n\nRemote traceback", 1)[0]
    first, _, rest = text.partition("\n")
    m = re.match(r"task .* \(id \d+\) failed on node \S+(?: after \d+ attempts?)?: (.*)", first)
    lines = [m.group(1) if m else first]
    lines += [ln for ln in rest.splitlines() if ln.strip() and not ln.startswith("logs: taskflow logs")]
    return lines


def log_files(run_dir: str | None, task_id: int) -> list[str]:
    """The files a program task's output went to on a shared file system (jobs/jobN.*)."""
    if not run_dir or not task_id:
        return []
    base = os.path.join(run_dir, "jobs", f"job{task_id}")
    return [base + ext for ext in (".out", ".err") if os.path.isfile(base + ext)]


def _here(frame_line: str) -> str:
    """A frame's file relative to the working directory when it is under it (``python
    wf.py`` names the script by its absolute path, ``taskflow run wf.py`` as given)."""
    m = FRAME.match(frame_line)
    cwd = os.getcwd() + os.sep
    if m and frame_line[m.end():].startswith(cwd):
        return frame_line[:m.end()] + frame_line[m.end() + len(cwd):]
    return frame_line


def describe(err: TaskError, run_dir: str | None, logs_cmd: str | None,
             cancelled: list[tuple[int, str]] | None = None) -> list[str]:
    """The block for one failed task."""
    tries = re.search(r" after (\d+) attempts?", str(err).split("\n", 1)[0])
    head = f"task {err.task_name or '?'} (id {err.task_id}) FAILED"
    if err.node and err.node != "-":
        head += f" on node {err.node}"
    if tries and tries.group(1) != "1":
        head += f" after {tries.group(1)} attempts"
    if not err.task_id:                 # the run itself (no node left)
        head = "the run FAILED"
    out = [head]
    what = _what(err)
    out += ["  " + what[0]] + ["    " + ln for ln in what[1:]]
    frames = user_frames(err.remote_traceback) if err.remote_traceback else []
    if frames:
        _, folded = fold_traceback(err.remote_traceback)
        out.append(f"  in your code (most recent call last{f'; {folded} taskflow frame' if folded else ''}"
                   f"{'s' if folded > 1 else ''}{' hidden' if folded else ''}):")
        out += ["  " + _here(ln) for ln in frames]
    files = [f for f in log_files(run_dir, err.task_id) if f not in "\n".join(what)]
    if files:
        out.append("  output files: " + ", ".join(files))
    if logs_cmd and err.task_id:
        out.append(f"  output and full traceback: {logs_cmd}")
    if cancelled:
        names = ", ".join(f"{n} (id {i})" for i, n in cancelled[:5])
        more = f" and {len(cancelled) - 5} more" if len(cancelled) > 5 else ""
        out.append(f"  not run because of it: {names}{more}")
    return out


def script_error(exc: BaseException) -> list[str]:
    """What the script raised: one line for a task's error, else its traceback folded."""
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    frames = [ln for ln in user_frames("".join(traceback.format_tb(exc.__traceback__)))
              if FRAME.match(ln)]
    where = ""
    if frames:
        m = re.match(r'\s*File "([^"]+)", line (\d+), in (.*)', frames[-1])
        if m:
            where = f" at {os.path.relpath(m.group(1)) if os.path.isabs(m.group(1)) else m.group(1)}" \
                    f":{m.group(2)}"
    if isinstance(exc, TaskError):
        first = str(exc).split("\n", 1)[0].rstrip(":")
        m = re.match(r"task .*? \(id \d+\) (?:failed|was cancelled because task .*? \(id \d+\) "
                     r"failed)", first)
        # (TaskError, not TaskError(ZeroDivisionError): the task's block below names its error)
        return [f"the script stopped{where}: {taskflow_class(exc).__name__}: "
                f"{m.group(0) if m else first}"]
    lines, _ = fold_traceback("".join(traceback.format_exception(
        type(exc), exc, exc.__traceback__, chain=False)) if exc.__cause__ is None else tb)
    return [f"the script raised {type(exc).__name__}{where}:"] + ["  " + ln for ln in lines]


def failure_lines(rt: RunView, cancelled_by: dict[int, list[tuple[int, str]]] | None = None,
                  errs: list[TaskError] | None = None) -> list[str]:
    """Every failure of the run (or ``errs``), once: the first few in full, then one line each."""
    if errs is None:
        errs = list(rt.failures)
    errs = [e for e in errs if not isinstance(e, TaskCancelled)]
    # the run's own failure (no node left) first: it says why no task was tried again
    errs = [e for e in errs if not e.task_id] + [e for e in errs if e.task_id]
    out: list[str] = []
    for i, err in enumerate(errs[:ONE_LINE]):
        if i < DETAILED:
            out += describe(err, rt.run_dir,
                            rt.logs_command(err.task_id) if err.task_id else None,
                            (cancelled_by or {}).get(err.task_id))
        elif not err.task_id:           # the run itself (no node left), as describe() says
            out.append(f"the run FAILED: {_what(err)[0]}")
        else:
            out.append(f"task {err.task_name} (id {err.task_id}) FAILED: {_what(err)[0]}")
    if len(errs) > ONE_LINE:
        out.append(f"... and {len(errs) - ONE_LINE} more failed tasks (taskflow status "
                   f"{rt.run_id} lists them)")
    for e in errs:
        e.seen()
    return out


def cancelled_by(rt: RunView) -> dict[int, list[tuple[int, str]]]:
    """Failed task id -> the tasks cancelled because of it (from the journal; {} without)."""
    out: dict[int, list[tuple[int, str]]] = {}
    if rt.journal is None or not rt.failures:
        return out
    from ..journal.reader import Journal
    try:
        with Journal(rt.run_dir) as j:
            rows = j.tasks(state="CANCELLED")
    except Exception:  # noqa: BLE001 - the report does without
        return out
    for t in rows:
        m = re.search(r"because task .* \(id (\d+)\) failed", t.get("error") or "")
        if m:
            out.setdefault(int(m.group(1)), []).append((t["id"], t["name"]))
    return out


def _to_report(rt: RunView, script_exc: BaseException | None) -> list[TaskError]:
    """The failures the end of the run describes: those the program never met, and the
    one it died of (an uncaught ``wait_on`` error: its block says where the task failed)."""
    died_of: set[int] = set()
    exc, depth = script_exc, 0
    while exc is not None and depth < 20:       # (its context chain: raised while handling)
        if isinstance(exc, TaskError):
            died_of.add(id(exc))
            if exc.root is not None:
                died_of.add(id(exc.root))
        exc, depth = exc.__context__, depth + 1
    died_of.update(id(e) for e in rt.unhandled())
    return [e for e in rt.failures if id(e) in died_of]


def end_of_run(rt: RunView, script_exc: BaseException | None, summary: str) -> str:
    """The text ``taskflow run`` prints on stderr when the run is over (and plain ``python
    script.py`` when its run failed: :mod:`.plainscript`)."""
    lines: list[str] = []
    if script_exc is not None:
        lines += script_error(script_exc)
        # a missing file a task was given as a plain value: which task, and the fix
        lines += hint(rt.run_dir if rt.journal is not None else None, script_exc)
    lines += failure_lines(rt, cancelled_by(rt), _to_report(rt, script_exc))
    return "\n".join([*("taskflow: " + ln if not ln.startswith(" ") else ln for ln in lines),
                      summary])

