"""``taskflow status / logs / graph / trace / report / monitor``: seeing a run.

Every command reads the run's journal (``<run-dir>/<run-id>/journal.db``);
RUN is a run id, a unique part of one, or omitted for the latest run.
"""
from __future__ import annotations

import datetime
import os
import re
import sys
import time
from typing import TYPE_CHECKING, Any

import click

from .._version import install_hint
from .options import examples, retired
from ..observe.attempts.fields import FIELDS, FORMATS
from ..journal.reader import Journal, RunNotFound, resolve_run

if TYPE_CHECKING:
    from ..console.view import RunView

run_dir_option = click.option(
    "--run-dir", type=click.Path(file_okay=False), default=None,
    help="Where runs are kept (default $TASKFLOW_RUN_DIR or .taskflow/runs).")


def _open(run: str | None, run_dir: str | None) -> Journal:
    try:
        return Journal(resolve_run(run, run_dir))
    except RunNotFound as exc:
        raise click.ClickException(str(exc)) from None


def _when(t: float | None) -> str:
    if not t:
        return "-"
    return datetime.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S")


def _clock(t: float) -> str:
    return datetime.datetime.fromtimestamp(t).strftime("%H:%M:%S.%f")[:-3]


def _duration(r: dict[str, Any]) -> str:
    t0, t1 = r.get("t_start"), r.get("t_end") or (time.time() if r["state"] == "running" else None)
    return f"{t1 - t0:.2f} s" if t0 and t1 else "-"


@click.command(epilog=examples("taskflow status                  # the latest run",
                               "taskflow status 20250101-1200    # a run by (part of) its id"))
@click.argument("run", required=False)
@run_dir_option
def status(run: str | None, run_dir: str | None) -> None:
    """State of RUN: counts per state, per task name, and the failed tasks.

    Exits 1 when the run failed or was interrupted (as `taskflow run` does), 0 when it
    finished or is still running.
    """
    with _open(run, run_dir) as j:
        r = j.run()
        c = j.counts()
        # a finished run's reason: the failures the script handled (runtime.state)
        handled = f", {r['reason']}" if r.get("reason") and r["state"] == "finished" else ""
        click.echo(f"run {r['run_id']}: {r['state']}{handled}  (started "
                   f"{_when(r.get('t_start'))}, {_duration(r)})")
        if r.get("reason") and r["state"] != "finished":
            click.echo(f"  why: {r['reason']}")
        if r["state"] in ("interrupted", "failed"):
            again = resume_command_of(r, j.run_dir)
            if again:
                click.echo(f"  continue it with: {again}")
        click.echo(f"  {j.run_dir}")
        click.echo(f"tasks: {c['total']}  " + "  ".join(
            f"{s.lower()} {c[s]}" for s in ("SUBMITTED", "READY", "DISPATCHED", "RUNNING", "DONE",
                                            "FAILED", "CANCELLED", "INTERRUPTED") if c[s]) +
            (f"  (retries {c['retries']})" if c["retries"] else ""))
        by = j.counts_by_name()
        for name in sorted(by):
            click.echo(f"  {name}: " + ", ".join(f"{n} {s.lower()}" for s, n in
                                                sorted(by[name].items())))
        calls, callers = j.nested_counts()
        if calls:
            click.echo(f"nested: {calls} task(s) called by {callers} running task(s)")
        nodes = j.nodes()
        if nodes:
            click.echo("nodes: " + ", ".join(
                f"{n['name']} ({n['slots']} slots{', lost: ' + n['reason'] if n['t_lost'] else ''})"
                for n in nodes))
        failed = j.failed()
        if failed:
            click.echo(f"failed tasks ({len(failed)}):")
            for t in failed[:20]:
                first = (t["error"] or "").split("\n")[0]
                parent = j.parent_of(t["id"]) if calls else None
                by_whom = f" (called by task {parent})" if parent is not None else ""
                click.echo(f"  task {t['id']} {t['name']}{by_whom} on {t['node'] or '-'}: "
                           f"{first}")
                click.echo(f"    logs: taskflow logs {r['run_id']} {t['id']}"
                           + (f" --run-dir {run_dir}" if run_dir else ""))
            if len(failed) > 20:
                click.echo(f"  ... and {len(failed) - 20} more")
        _retried(j, c["retries"])
        _moved(j)
        state = r["state"]
    # as `taskflow run` does: non-zero for a run that failed or did not finish
    if state in ("failed", "interrupted"):
        sys.exit(1)


@click.command(epilog=examples("taskflow logs 7                  # task 7 of the latest run",
                               "taskflow logs RUN --follow       # every task's lines, live",
                               "taskflow logs RUN 7 -l STDERR",
                               "taskflow logs RUN --item 17      # item 17 of a taskflow map"))
@click.argument("run", required=False)
@click.argument("task", required=False, type=int)
@click.option("--item", type=click.IntRange(min=1), default=None, metavar="N",
              help="The task of item N of a `taskflow map` (its index, from 1).")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new lines while the run goes on.")
@click.option("--level", "-l", multiple=True,
              help="Only these levels (STDOUT, STDERR, RAW); repeat or comma-separate.")
@run_dir_option
def logs(run: str | None, task: int | None, item: int | None, follow: bool,
         level: tuple[str, ...], run_dir: str | None) -> None:
    """Output lines of TASK in RUN (all tasks when TASK is omitted).

    A lone number short enough to be a task id means that task of the latest run.
    """
    if run is not None and task is None and run.isdigit() and len(run) < 8:
        task, run = int(run), None
    levels = [x.strip().upper() for v in level for x in v.split(",") if x.strip()] or None
    with _open(run, run_dir) as j:
        if item is not None:
            if task is not None:
                raise click.UsageError("give a TASK or --item N, not both")
            task = _task_of_item(j, item)
        if task is not None and j.task(task) is None:
            raise click.ClickException(f"run {j.run()['run_id']} has no task {task}")
        names = {t["id"]: t["name"] for t in j.tasks()} if task is None else {}
        shown = _follow(j, task, levels, follow, names, 0)
        if task is None and not shown:          # never silence: say what there is
            what = "output lines" if not levels else f"{'/'.join(levels)} lines"
            state = j.run()["state"]
            click.echo(f"-- no task of run {j.run()['run_id']} ({state}, {len(names)} "
                       f"task(s)) wrote {what} to the journal"
                       + (" yet" if state == "running" else "")
                       + "; a program's output files: taskflow logs RUN TASK")
        t = j.task(task) if task is not None else None
        if t is not None:
            _where_output_went(t, shown, levels)
            if not levels:
                _attempts(t, j)
        if t is not None and t["state"] == "FAILED" and not levels:
            tries = f"after {t['attempts']} attempt(s)" if t["attempts"] else \
                "before it started"         # (its node was lost with it still queued)
            click.echo(f"-- task {task} {t['name']} FAILED on {t['node'] or '-'} {tries}:")
            click.echo(t["traceback"] or t["error_full"] or t["error"] or "")


def _task_of_item(j: Journal, item: int) -> int:
    """The task of item ``item`` of a map run (the last attempt's, if it ran twice)."""
    from ..farm.items import ENV
    found = j.task_with_params(f"{ENV[0]}='{item}', %")
    if found is None:
        r = j.run()
        why = ("it was restored from the run this one resumed (`taskflow runs`)"
               if '"--resume"' in (r.get("argv") or "") else "it has no such item")
        raise click.ClickException(f"run {r['run_id']} ran no task for item {item}: {why}")
    return found


_RUN_ID = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")


def resume_command_of(r: dict[str, Any], run_dir: str) -> str | None:
    """The command that continues a run that did not finish (``r``: the journal's run row,
    ``run_dir``: its directory), from the command line it ran with, options kept; None
    when it cannot be resumed (no resume log: it ran ``--no-resumable``)."""
    import json
    import shlex
    if not os.path.exists(os.path.join(run_dir, "resume.log")):
        return None
    try:
        argv = [str(a) for a in json.loads(r.get("argv") or "[]")]
    except ValueError:
        return None
    if not argv:
        return None
    base = os.path.basename(argv[0])
    verb = "run"
    if len(argv) > 1 and argv[1] in ("run", "map") and (base in ("taskflow", "__main__.py")):
        verb = argv[1]
        rest, words = argv[2:], []
        i = 0
        while i < len(rest):
            if rest[i] == "--resume":   # it was resumed already: this run's id now
                i += 2 if i + 1 < len(rest) and _RUN_ID.match(rest[i + 1]) else 1
                continue
            words.append(rest[i])
            i += 1
    else:                               # python script.py args: the run it started
        words = argv
    root = os.path.dirname(os.path.abspath(run_dir))
    from ..journal.root import runs_root
    if root != os.path.abspath(runs_root()) and "--run-dir" not in words:
        words = ["--run-dir", root, *words]
    return shlex.join(["taskflow", verb, "--resume", r["run_id"], *words])


SHOWN_RETRIED = 20      # tasks whose retries `status` lists one by one


def _retried(j: Journal, count: int) -> None:
    """Why tasks ran again, per task (the journal's RETRY transitions)."""
    if not count:
        return
    retried = j.retries(limit=SHOWN_RETRIED)
    if not retried:
        return
    click.echo("ran again:")
    names = j.names_of(list(retried))
    for tid, tries in retried.items():
        click.echo(f"  task {tid} {names.get(tid, '?')}: {len(tries)} time(s)")
        for _t, node, why in tries:
            click.echo(f"    on {node}: {_first_line(why)}")
    more = count - sum(len(v) for v in retried.values())
    if more > 0:
        click.echo(f"  ... and {more} more retries (taskflow logs RUN TASK says each one)")


def _attempts(t: dict[str, Any], j: Journal) -> None:
    """``taskflow logs RUN TASK``: each attempt that ended in a retry, and why; the moves
    of its value and its inputs."""
    for n, (_t, node, why) in enumerate(j.retries(task=t["id"]).get(t["id"], []), 1):
        click.echo(f"-- attempt {n} on {node} ended: {_first_line(why)}; it ran again")
    from ..observe import moves
    for line in moves.of_task(j, t["id"]):
        click.echo(f"-- moved: {line}")


def _moved(j: Journal) -> None:
    """What moving values took (observe.moves): the totals and the longest moves."""
    from ..observe import moves
    line = moves.totals(j)
    if line:
        click.echo(line)
        for one in moves.longest(j):
            click.echo(f"  {one}")


def _first_line(text: str) -> str:
    line = (text or "").strip().split("\n", 1)[0]
    return line if len(line) <= 300 else line[:297] + "..."


def _where_output_went(t: dict[str, Any], shown: int, levels: list[str] | None) -> None:
    """Say so when a task printed nothing, and where a program's output files are."""
    streams = t.get("streams") or {}
    if not shown:
        what = "no output lines" if not levels else f"no {'/'.join(levels)} lines"
        state = t["state"].lower()
        click.echo(f"-- task {t['id']} {t['name']} ({state}) wrote {what} to the journal"
                   + ("" if t["state"] in ("DONE", "FAILED", "CANCELLED") else " yet"))
    for stream in ("stdout", "stderr", "stdin"):
        if stream in streams:
            pname, path = streams[stream]
            verb = "read from" if stream == "stdin" else "went to"
            state = "" if os.path.exists(path) else " (not there: the task did not finish well)" \
                if t["state"] != "DONE" else " (since moved or deleted)"
            click.echo(f"-- its {stream} {verb} {path} (parameter {pname}){state}")
    files = t.get("log_files") or []
    if files:
        click.echo(f"-- the program's output {'is also' if shown else 'files'}: {', '.join(files)}")


def _by_time(ln: dict[str, Any]) -> tuple[float, int]:
    return (ln["t"] or 0.0, ln["id"])


def _follow(j: Journal, task: int | None, levels: list[str] | None, follow: bool,
            names: dict[int, str], last: int) -> int:
    """Print the log lines (and new ones while ``follow``); return how many. The journal
    keeps them as they arrived, a batch per task; each batch read is printed in time
    order (lines of several tasks interleaved as they were written)."""
    count = 0
    if True:
        while True:
            lines = j.logs(task=task, levels=levels, after=last, limit=5000)
            for ln in sorted(lines, key=_by_time):
                where = "" if task is not None else \
                    f"[{ln['task_id']} {names.get(ln['task_id'], '?')}] "
                click.echo(f"{_clock(ln['t'])} {where}{ln['level']:<6} {ln['line']}")
                count += 1
            if lines:
                last = lines[-1]["id"]
            if len(lines) == 5000:
                continue
            if not follow or (not lines and j.run()["state"] != "running"):
                break
            if task is None:
                names.update({t["id"]: t["name"] for t in j.tasks()})
            try:
                time.sleep(0.5)
            except KeyboardInterrupt:
                break
    return count


@click.command(epilog=examples("taskflow graph                   # the latest run's graph.svg",
                               "taskflow graph RUN -o pictures/"))
@click.argument("run", required=False)
@click.option("--out", "-o", type=click.Path(file_okay=False), default=None,
              help="Directory for graph.dot / graph.svg (default: the run's directory).")
@click.option("--tasks", "kind", flag_value="tasks",
              help="One box per task, however many (the .svg up to 5,000 tasks).")
@click.option("--names", "kind", flag_value="names",
              help="One box per task name with its counts by state (Snakemake's rule graph).")
@run_dir_option
def graph(run: str | None, out: str | None, kind: str | None, run_dir: str | None) -> None:
    """Write RUN's graph as graph.dot and graph.svg (Graphviz).

    Up to 300 tasks one box per task, above that one box per task name with its counts
    by state and arrows with the number of dependencies; --tasks / --names choose.
    Wide fan-outs wrap into blocks, and no drawing is more than about 4,000 pt a side.

    \b
    Example:
      taskflow graph -o pictures --names
    """
    from ..observe.graph import write_graph
    try:
        paths = write_graph(resolve_run(run, run_dir), out, kind=kind or "auto")
    except RunNotFound as exc:
        raise click.ClickException(str(exc)) from None
    drawn = paths.pop("kind")
    _echo_paths(paths)
    click.echo("(one box per task; --names draws one per task name)" if drawn == "tasks" else
               "(one box per task name; --tasks draws every task)", err=True)


@click.command(epilog=examples("taskflow trace                   # the latest run's trace.json",
                               "taskflow trace RUN --format tsv > trace.tsv",
                               "taskflow trace RUN --format csv --fields name,realtime,peak_rss"))
@click.argument("run", required=False)
@click.option("--format", "fmt", type=click.Choice(["perfetto", *FORMATS]),
              default="perfetto", show_default=True,
              help="perfetto: trace.json and gantt.png; tsv, csv, json: one row per task "
                   "attempt (Nextflow's trace fields and taskflow's own).")
@click.option("--fields", default=None, metavar="F1,F2,...",
              help=f"The columns of a tsv/csv/json trace, in order (default all: "
                   f"{','.join(FIELDS)}).")
@click.option("--out", "-o", type=click.Path(), default=None,
              help="perfetto: the directory for trace.json / gantt.png (default: the run's "
                   "directory); tsv/csv/json: the file (default: standard output).")
@run_dir_option
def trace(run: str | None, fmt: str, fields: str | None, out: str | None,
          run_dir: str | None) -> None:
    """RUN's trace: a Perfetto timeline and Gantt chart, or a table of its task attempts.

    --format tsv|csv|json writes one row per task attempt that ended: times,
    CPU, peak resident memory (from the kernel, not sampled), bytes read and
    written, node, parent task, resources. `taskflow run --trace-file F`
    writes the same while the run goes.
    """
    try:
        path = resolve_run(run, run_dir)
    except RunNotFound as exc:
        raise click.ClickException(str(exc)) from None
    if fmt == "perfetto":
        if fields:
            raise click.UsageError("--fields is for --format tsv, csv or json")
        with Journal(path) as j:
            j.require_tables()
        if out is not None and os.path.isfile(out):
            raise click.UsageError(f"--out {out}: a perfetto trace is written into a "
                                   f"directory (trace.json, gantt.png); that is a file")
        from ..observe.trace import write_trace
        _echo_paths(write_trace(path, out))
        return
    from ..observe.attempts.fields import pick, write_table
    from ..observe.attempts.rows import trace_rows
    try:
        names = pick(fields)
    except ValueError as exc:
        raise click.UsageError(f"--fields: {exc}") from None
    with Journal(path) as j:
        j.require_tables()
        if out is None or out == "-":
            write_table(sys.stdout, fmt, names, trace_rows(j))
            return
        try:
            with open(out, "w", newline="") as f:
                n = write_table(f, fmt, names, trace_rows(j))
        except OSError as exc:
            raise click.ClickException(f"--out {out}: {exc.strerror or exc}") from None
    click.echo(f"{fmt}: {out} ({n} attempt(s))", err=True)


def _echo_paths(paths: dict[str, Any]) -> None:
    for k, v in paths.items():
        if k.endswith("_error"):
            click.echo(f"taskflow: no {k[:-6]}: {v}", err=True)
        else:
            click.echo(f"{k}: {v}")


@click.command(epilog=examples("taskflow report                  # the latest run, markdown",
                               "taskflow report RUN --html report.html"))
@click.argument("run", required=False)
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the report as one self-contained HTML page, with its plots.")
@run_dir_option
def report(run: str | None, html_path: str | None, run_dir: str | None) -> None:
    """RUN's report: the run, its failures, resources per task name, the scheduling model.

    Markdown on stdout, summary first as Nextflow's: the command, times and exit
    status, the failed tasks with their errors, then per task name the time, CPU and
    memory, last the model (C, W(t), M = C / W, the critical path). --html writes the
    same as a page that needs no network instead (box plots, the timeline of the
    slots, the graph fitted to the page, w(t)), and prints where.

    \b
    Example:
      taskflow report --html report.html
    """
    from ..observe.report import report as make
    try:
        md = make(resolve_run(run, run_dir), html_path)
    except RunNotFound as exc:
        raise click.ClickException(str(exc)) from None
    if html_path:                   # the page is what was asked for: not the markdown too
        click.echo(f"html: {html_path}", err=True)
    else:
        click.echo(md, nl=False)


@click.command(epilog=examples("taskflow monitor                 # the latest run, any free port",
                               "taskflow monitor RUN --port 8080"))
@click.argument("run", required=False)
@click.option("--port", type=int, default=0, help="Port (default: any free one).")
@retired("-p", "--port", "-p is --partition in taskflow submit, as in sbatch", takes_value=True)
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; anything but 127.0.0.1 exposes the token-protected page.")
@click.option("--token", default=None, help="Token to require (default: a random one).")
@run_dir_option
def monitor(run: str | None, port: int, host: str, token: str | None, run_dir: str | None) -> None:
    """Serve the web monitor for RUN (default: the latest) until interrupted."""
    mon = _start_monitor(run_dir, run and resolve_run(run, run_dir), port, host, token)
    try:
        mon.serve_forever()
    except KeyboardInterrupt:
        pass


def _start_monitor(run_dir: str | None, run_path: str | None, port: int, host: str = "127.0.0.1",
                   token: str | None = None, background: bool = False, live: Any = None) -> Any:
    try:
        from ..monitor import Monitor
    except ImportError as exc:
        raise click.ClickException(f"the monitor needs Flask, uvicorn and a2wsgi: {install_hint('monitor')} "
                                   f"({exc})") from None
    import os
    root = os.path.dirname(run_path) if run_path else run_dir
    mon = Monitor(root, os.path.basename(run_path) if run_path else None, host, port, token,
                  live=live)
    click.echo(f"taskflow monitor: {mon.url}", err=True)
    return mon.start() if background else mon


# -- hooks for `taskflow run` -g / -t / --monitor / --metrics-port --------------------
def run_started(rt: RunView, monitor_port: int | None, metrics_port: int | None = None
                ) -> tuple[Any, Any]:
    """Start the monitor and the /metrics server for a run that has just started
    (None: not asked)."""
    if monitor_port is None and metrics_port is None:
        return None, None
    if rt.journal is None:
        click.echo("taskflow: the monitor and /metrics need the journal; it is off", err=True)
        return None, None
    mon = _start_monitor(None, rt.run_dir, monitor_port, background=True, live=rt) \
        if monitor_port is not None else None
    metrics = None
    if metrics_port is not None:
        try:
            from ..metrics.server import MetricsServer
            metrics = MetricsServer(rt, port=metrics_port).start()
        except ImportError as exc:
            raise click.ClickException(f"--metrics-port needs prometheus_client and uvicorn: "
                                       f"{install_hint('metrics')} ({exc})") from None
        click.echo(f"taskflow metrics: {metrics.url}", err=True)
    return mon, metrics


def run_finished(rt: RunView, graph_: bool, trace_: bool, servers: tuple[Any, Any]) -> None:
    """Write the pictures asked for and stop the monitor and the /metrics server."""
    mon, metrics = servers
    if metrics is not None:
        metrics.stop()
    if mon is not None:
        mon.stop(grace=3.0)     # the pages open now see the run's end first
        click.echo(f"taskflow: monitor stopped; `taskflow monitor {rt.run_id}` serves this run "
                   f"again", err=True)
    if rt.journal is None or not (graph_ or trace_):
        return
    from ..observe.graph import write_graph
    from ..observe.trace import write_trace
    for wanted, fn in ((graph_, write_graph), (trace_, write_trace)):
        if wanted:
            try:
                for k, v in fn(rt.run_dir).items():
                    if k == "kind":
                        continue
                    click.echo(f"taskflow: {'no ' + k[:-6] + ': ' if k.endswith('_error') else k + ': '}"
                               f"{v}", err=True)
            except Exception as exc:  # noqa: BLE001 - pictures must not fail the run
                click.echo(f"taskflow: could not write {fn.__name__[6:]}: {exc}", err=True)


COMMANDS = [status, logs, graph, trace, report, monitor]
