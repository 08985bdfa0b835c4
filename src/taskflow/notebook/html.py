"""The HTML a notebook shows of a future, a list of futures, a run and a cell's progress.

Pure functions of what they are given: a future is read through its fields
(the runtime's own: nothing here waits or fetches a value, and reading a
failed future's error does not count as the program meeting it), a run
through :class:`~taskflow.console.view.RunView`, a finished task's node and
times from the run's journal. Every text is escaped. The failure's frames are
those of the user's code (:func:`taskflow.console.failures.user_frames`), as
the end of a script's run prints them.
"""
from __future__ import annotations

import html
import re
import sys
import time
from typing import TYPE_CHECKING, Any, Iterable, Protocol

from ..console.frames import user_frames

if TYPE_CHECKING:
    from ..errors import TaskError


class Run(Protocol):
    """What these pages read of a run (the runtime meets it; a
    :class:`~taskflow.console.view.RunView`'s part, named here to keep this module off the
    runtime's imports)."""

    @property
    def run_id(self) -> str: ...

    @property
    def run_dir(self) -> str: ...

    @property
    def t_start(self) -> float: ...

    @property
    def tally(self) -> Any: ...

    @property
    def nodes(self) -> Any: ...

    @property
    def journal(self) -> Any: ...

    @property
    def failures(self) -> list[TaskError]: ...

    def unhandled(self) -> list[TaskError]: ...


MAX_FAILURES = 5        # failures shown with their frames in a list's or a run's card

_STYLE = ("<style>.tf-card{font-family:var(--jp-code-font-family,monospace);font-size:12px;"
          "line-height:1.4}.tf-card table{border-collapse:collapse}.tf-card td,.tf-card th"
          "{padding:1px 8px;text-align:left!important}.tf-bar{display:inline-block;width:180px;height:10px;"
          "background:#e5e5e5;vertical-align:middle}.tf-bar span{display:inline-block;height:10px}"
          ".tf-ok{background:#3c9a3c}.tf-run{background:#8fc78f}.tf-bad{background:#d23c3c}"
          ".tf-fail{color:#c00;font-weight:bold}.tf-tb{background:#fff3f3;border-left:3px solid "
          "#d23c3c;padding:4px 8px;margin:4px 0;white-space:pre;overflow-x:auto}</style>")

_STATE_OF_TASK = {"SUBMITTED": "waiting", "READY": "waiting", "DISPATCHED": "queued on a node",
                  "RUNNING": "running"}


def _e(x: object) -> str:
    return html.escape(str(x))


def _seconds(t0: float | None, t1: float | None) -> str:
    if not t0:
        return "-"
    return f"{(t1 or time.time()) - t0:.2f} s"


def future_state(fut: Any) -> str:
    """``done``, ``failed``, ``cancelled``, ``running``, ``queued on a node`` or ``waiting``."""
    from ..errors import TaskCancelled
    if fut.done():
        exc = fut._exception
        if exc is None:
            return "done"
        return "cancelled" if isinstance(exc, TaskCancelled) else "failed"
    producer = fut._producer
    if producer is None:
        return "waiting"
    return _STATE_OF_TASK.get(str(producer.state), "waiting")


def _task_row(fut: Any) -> dict[str, Any]:
    """What is known of the task that made ``fut``: id, name, node, times (the journal's
    row once the task has ended; the live task before)."""
    producer = fut._producer
    if producer is not None:
        node = getattr(producer.node, "name", producer.node) or ""
        return {"id": producer.id, "name": producer.spec.name, "node": node,
                "t_start": producer.t_start or None, "t_end": None}
    exc = fut._exception
    row: dict[str, Any] = {"id": fut.producer_id(), "name": "", "node": "", "t_start": None,
                           "t_end": None}
    if exc is not None:
        row.update(id=exc.task_id, name=exc.task_name, node=exc.node)
    rt = fut._rt
    journal = getattr(rt, "journal", None)
    if row["id"] and journal is not None:
        got = journal_task(rt, row["id"])
        if got is not None:
            row.update({k: v for k, v in got.items() if v or not row.get(k)})
    return row


JOURNAL_WAIT = 1.0      # s a view waits for a task that has just ended to be in the journal


def journal_task(run: Any, tid: int) -> dict[str, Any] | None:
    """An ended task's row in the run's journal (None when it is not there, or unreadable).

    A task that has just ended may not be written yet (the journal's writer is another
    process): the run's events are delivered, then the row is looked for up to
    :data:`JOURNAL_WAIT` seconds."""
    from ..journal.reader import Journal
    deadline = time.monotonic() + JOURNAL_WAIT
    live = not getattr(run, "stopped", True)
    if live:
        run.bus.flush()
    while True:
        try:
            with Journal(run.run_dir) as j:
                row = j.task(tid)
        except Exception:  # noqa: BLE001 - a display does without
            row = None
        if row is not None and row.get("t_end") or not live or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if row is None:
        return None
    return {k: row.get(k) for k in ("name", "node", "t_start", "t_end")}


_HEAD = re.compile(r"task .* \(id \d+\) failed on node \S+(?: after \d+ attempts?)?: ")
_AT = re.compile(r'^\s*File "([^"]+)", line (\d+), in ')


def error_lines(err: Any) -> list[str]:
    """The error's own words (the task's exception), without the header and the hint."""
    text = str(err).split("\n\nRemote traceback", 1)[0]
    return [_HEAD.sub("", ln, count=1) for ln in text.splitlines()
            if ln.strip() and not ln.startswith("logs: taskflow logs")]


def with_sources(frames: list[str]) -> list[str]:
    """``frames`` with the source line of each frame that came without one, from this
    process's line cache (a notebook cell's code is there: the node had no file to read),
    and a cell's file named as IPython names it (``Cell In[4], line 3, in ratio``)."""
    import linecache
    out: list[str] = []
    for i, line in enumerate(frames):
        m = _AT.match(line)
        out.append(_cell_named(line, m.group(1)) if m else line)
        nxt = frames[i + 1] if i + 1 < len(frames) else ""
        if m and (not nxt.startswith("    ") or _AT.match(nxt)):
            src = linecache.getline(m.group(1), int(m.group(2))).strip()
            if src:
                out.append("    " + src)
    return out


def _cell_named(line: str, path: str) -> str:
    """A frame's line with a notebook cell's file as the cell (as it is, elsewhere)."""
    shell = ipython().get_ipython() if "IPython" in sys.modules else None
    name_of = getattr(getattr(shell, "compile", None), "format_code_name", None)
    named = name_of(path) if name_of is not None else None
    if not named:
        return line
    return line.replace(f'File "{path}"', f"{named[0]} {named[1]}", 1)


def error_html(err: Any) -> str:
    """A task's error: its own words and the frames of the user's code."""
    frames = user_frames(err.remote_traceback) if getattr(err, "remote_traceback", "") else []
    words = error_lines(err)
    out = f"<div class='tf-fail'>{_e(words[0] if words else type(err).__name__)}</div>"
    out += "".join(f"<div>{_e(w)}</div>" for w in words[1:])
    if frames:
        out += ("<div>in your code (most recent call last):</div><div class='tf-tb'>"
                + _e("\n".join(with_sources(frames))) + "</div>")
    return out


def future_html(fut: Any) -> str:
    """One future: task name, state, node, duration; the error with the user's frames."""
    state = future_state(fut)
    row = _task_row(fut)
    name = row["name"] or getattr(fut, "_label", "") or f"d{fut._did}"
    tid = f" (id {row['id']})" if row["id"] else ""
    cls = " class='tf-fail'" if state == "failed" else ""
    cells = [("task", f"{_e(name)}{tid}"), ("state", f"<span{cls}>{_e(state)}</span>"),
             ("node", _e(row["node"] or "-")),
             ("duration", _seconds(row["t_start"], row["t_end"]) if state != "waiting" else "-")]
    body = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in cells)
    err = fut._exception if fut.done() else None
    extra = error_html(err) if err is not None and state == "failed" else (
        f"<div>{_e(str(err).splitlines()[0])}</div>" if err is not None else "")
    return f"{_STYLE}<div class='tf-card'><table>{body}</table>{extra}</div>"


def futures_html(futs: Iterable[Any]) -> str:
    """A list of futures: how many are in each state, and the first failures in full."""
    counts: dict[str, int] = {}
    failed: list[Any] = []
    n = 0
    for f in futs:
        n += 1
        s = future_state(f)
        counts[s] = counts.get(s, 0) + 1
        if s == "failed":
            failed.append(f._exception)
    order = ("done", "failed", "cancelled", "running", "queued on a node", "waiting")
    parts = [f"{counts[s]} {s}" for s in order if counts.get(s)]
    head = f"<b>{n} future{'s' if n != 1 else ''}</b>: " + (", ".join(parts) or "none")
    body = "".join(f"<div><b>{_e(e.task_name)} (id {e.task_id})</b> on {_e(e.node or '-')}"
                   f"</div>{error_html(e)}" for e in failed[:MAX_FAILURES])
    if len(failed) > MAX_FAILURES:
        body += f"<div>... and {len(failed) - MAX_FAILURES} more failed</div>"
    return f"{_STYLE}<div class='tf-card'><div>{head}</div>{body}</div>"


def banner_text(rt: Run, monitor_url: str | None = None) -> str:
    """The line ``taskflow.start()`` shows: the run, its nodes and slots, the monitor."""
    nodes = [n for n in rt.nodes if n.usable]
    line = (f"taskflow run {rt.run_id}: {len(nodes)} node(s), "
            f"{sum(n.slots for n in nodes)} slot(s)")
    return line + (f"; monitor: {monitor_url}" if monitor_url else "")


def banner_html(rt: Run, monitor_url: str | None = None, note: str = "") -> str:
    """:func:`banner_text` with the monitor as a link (``note``: said after the line)."""
    line = _e(banner_text(rt, None)) + (f" ({_e(note)})" if note else "")
    if monitor_url:
        line += f"; <a href='{_e(monitor_url)}' target='_blank'>monitor</a>"
    return f"{_STYLE}<div class='tf-card'>{line}</div>"


def run_html(rt: Run, state: str, wall: float) -> str:
    """A run: its state, counts, failures (the user's frames) and the report command."""
    c = rt.tally
    head = (f"<b>taskflow run {_e(rt.run_id)}</b> {_e(state)} after {wall:.2f} s: "
            f"{c.submitted} tasks, {c.done} done, {c.failed} failed, {c.cancelled} cancelled, "
            f"{f'{c.interrupted} interrupted, ' if c.interrupted else ''}{c.retries} retried")
    if c.failed and not rt.unhandled():
        head += " (handled by the script)"
    errs = [e for e in rt.failures if e.kind != "cancelled"]
    body = ""
    for e in errs[:MAX_FAILURES]:
        body += (f"<div><b>{_e(e.task_name)} (id {e.task_id})</b> on {_e(e.node or '-')}"
                 f"{' (handled by the script)' if e.handled else ''}</div>{error_html(e)}")
    if len(errs) > MAX_FAILURES:
        body += f"<div>... and {len(errs) - MAX_FAILURES} more failed</div>"
    if rt.journal is not None:
        body += (f"<div>report: <code>taskflow report {_e(rt.run_id)} --html report.html"
                 f"</code>; one task's output: <code>taskflow logs {_e(rt.run_id)} ID</code></div>")
    return f"{_STYLE}<div class='tf-card'><div>{head}</div>{body}</div>"


def progress_html(run_id: str, rows: list[tuple[str, int, int, int, int, int]],
                  live: bool) -> str:
    """A cell's progress: a bar per task name (done, running, failed of submitted).

    ``rows``: (name, submitted, done, running, failed, cancelled); ``live``: tasks of the
    cell have not all ended (the display still updates)."""
    sums = [sum(int(r[i]) for r in rows) for i in range(1, 6)]
    tot = ("all tasks", sums[0], sums[1], sums[2], sums[3], sums[4])
    trs = []
    for name, sub, done, running, failed, cancelled in rows + ([tot] if len(rows) > 1 else []):
        w = 180 / max(sub, 1)
        bar = (f"<span class='tf-ok' style='width:{done * w:.0f}px'></span>"
               f"<span class='tf-run' style='width:{running * w:.0f}px'></span>"
               f"<span class='tf-bad' style='width:{(failed + cancelled) * w:.0f}px'></span>")
        fail = f"<span class='tf-fail'>{failed} failed</span>" if failed else ""
        canc = f"{cancelled} cancelled" if cancelled else ""
        trs.append(f"<tr><td>{_e(name)}</td><td><span class='tf-bar'>{bar}</span></td>"
                   f"<td>{done}/{sub} done</td><td>{running} running</td><td>{fail}</td>"
                   f"<td>{canc}</td></tr>")
    ended = sums[1] + sums[3] + sums[4]
    what = f"{ended}/{sums[0]} tasks ended, running" if live else f"all {sums[0]} tasks ended"
    head = f"taskflow run {_e(run_id)}: {what}"
    return (f"{_STYLE}<div class='tf-card tf-progress' data-live='{int(live)}'><div>{head}</div>"
            f"<table>{''.join(trs)}</table></div>")


def run_card(rt: Run) -> str:
    """A run's HTML (:func:`run_html`) as it is now: running, or how it ended."""
    if not getattr(rt, "stopped", False):
        state, wall = "running", time.time() - rt.t_start if rt.t_start else 0.0
    else:
        state = rt.end_state()[0]  # type: ignore[attr-defined]
        wall = _ended_after(rt.run_dir) if rt.journal is not None else 0.0
    return run_html(rt, state, wall)


def _ended_after(run_dir: str) -> float:
    """How long a stopped run took (its journal's times)."""
    from ..journal.reader import Journal
    try:
        with Journal(run_dir) as j:
            row = j.run()
    except Exception:  # noqa: BLE001 - a display does without
        return 0.0
    t0, t1 = row.get("t_start"), row.get("t_end")
    return float(t1 - t0) if t0 and t1 else 0.0


_banner: dict[str, int] = {}     # run id -> the cell whose output shows its start line


def shown_in_cell(run_id: str, cell: int) -> None:
    """``taskflow.start()`` showed the run's line in cell ``cell``."""
    _banner.clear()
    _banner[run_id] = cell


def display_run(rt: Run) -> None:
    """Jupyter shows a run (``_ipython_display_``): its card, unless it is the value of the
    cell that started it, which shows its line already."""
    shell = ipython().get_ipython()
    if shell is not None and _banner.get(rt.run_id) == shell.execution_count \
            and not getattr(rt, "stopped", False):
        return
    show_html(run_card(rt))


def ipython(part: str = "") -> Any:
    """IPython's module ``part`` (``"display"``; "": IPython), untyped as IPython is."""
    import importlib
    return importlib.import_module("IPython" + (f".{part}" if part else ""))


def show_html(page: str, display_id: bool = False) -> Any:
    """Display ``page`` in the current cell's output, with its text for front ends that
    show no HTML (its handle with ``display_id``: :func:`update_html`)."""
    return ipython("display").display(bundle(page), raw=True, display_id=display_id or None)


def update_html(handle: Any, page: str) -> None:
    """Show ``page`` instead wherever the display of ``handle`` is."""
    handle.update(bundle(page), raw=True)


def bundle(page: str) -> dict[str, str]:
    """``page`` as HTML and as text (its rows and blocks one a line, tags dropped)."""
    text = re.sub(r"<style>.*?</style>", "", page, flags=re.S)
    text = re.sub(r"</(?:tr|div)>", "\n", text)
    text = re.sub(r"</t[dh]>", " ", text)
    text = html.unescape(re.sub(r"<[^>]+>", "", text))
    text = "\n".join(" ".join(ln.split()) for ln in text.splitlines() if ln.strip())
    return {"text/html": page, "text/plain": text}
