"""``taskflow run --resume [RUN_ID]``: which earlier run continues; ``taskflow explain``.

Without a run id, the latest run of the same script started in the same
directory (in the same ``--run-dir``) is continued. The resumed run is a new
run (its own id and journal) that restores every call the earlier run
finished (runtime/recovery/log.py) and runs the rest.
"""
from __future__ import annotations

import json
import os

import click

from ..errors import RunNotFound
from ..journal.reader import Journal, list_runs, resolve_run, runs_root
from ..runtime.recovery.log import LOG_NAME
from ..runtime.recovery.reasons import summary_lines
from ..runtime.recovery.restore import log_origin
from .observe import run_dir_option
from .options import examples


def run_to_resume(which: str, script: str, run_dir: str | None) -> str:
    """The directory of the run to continue (``which``: a run id, or "latest")."""
    root = runs_root(run_dir)
    if which != "latest":
        try:
            return resolve_run(which, root)
        except RunNotFound as exc:
            raise click.UsageError(f"--resume {which}: {exc}") from None
    want = os.path.abspath(script)
    cwd = os.getcwd()
    for r in reversed(list_runs(root)):      # newest first
        run_path = os.path.join(root, r["run_id"])
        if not os.path.exists(os.path.join(run_path, LOG_NAME)):
            continue
        damaged = None
        try:
            with Journal(run_path) as j:
                row = j.run()
            where, argv = row.get("cwd"), json.loads(row.get("argv") or "[]")
        except Exception as exc:  # noqa: BLE001 - its resume log may still say which run
            origin = log_origin(run_path)
            if origin is None:
                continue
            (where, argv), damaged = origin, exc
        if where != cwd or not isinstance(argv, list):
            continue
        if any(os.path.abspath(os.path.join(cwd, a)) == want for a in argv
               if isinstance(a, str)):
            if damaged is not None:
                click.echo(f"taskflow: {damaged}; run {r['run_id']} is resumed all the "
                           f"same: its resume log says it is a run of {script} started here",
                           err=True)
            return run_path
    raise click.UsageError(
        f"--resume: no earlier resumable run of {script} in {cwd} (runs under {root}; "
        f"one started --no-resumable cannot be); name a run: "
        f"--resume RUN_ID (see `taskflow runs`)")


@click.command(epilog=examples("taskflow explain                 # the latest run",
                               "taskflow explain 20250101-1200 --names"))
@click.argument("run", required=False)
@click.option("--names", "names_only", is_flag=True,
              help="Only the line per task name, not each call that ran again.")
@run_dir_option
def explain(run: str | None, names_only: bool, run_dir: str | None) -> None:
    """Why the calls of a resumed RUN ran again (default: the latest run).

    A line per task name (the calls reused from the earlier run, of how many,
    and why the others ran, counted by reason), then each call that ran again
    with its parameters and its reason.
    """
    try:
        path = resolve_run(run, runs_root(run_dir))
    except RunNotFound as exc:
        raise click.ClickException(str(exc)) from None
    with Journal(path) as j:
        print_reasons(j.require_tables(), names_only)


def print_reasons(j: Journal, names_only: bool = False, err: bool = False,
                  calls_only: bool = False) -> None:
    """``taskflow explain``'s lines for the run of journal ``j`` (``err``: on stderr;
    ``calls_only``: not the lines per name, said already)."""
    reruns, restored = j.resume_counts()
    run_id = j.run().get("run_id", os.path.basename(j.run_dir))
    reused = j.reused_by_name()
    if not reruns and not reused:
        click.echo(f"run {run_id} was not resumed from an earlier run (taskflow run --resume)",
                   err=err)
        return
    ran = sum(sum(v.values()) for v in reruns.values())
    if calls_only:
        names_only = False
    else:
        _summary(run_id, reused, restored, reruns, ran, err)
    if names_only or not ran:
        return
    click.echo("calls that ran again:", err=err)
    for tid, name, params, why in j.each_rerun():
        click.echo(f"  task {tid} {name}({_short(params)}): {why}", err=err)


def _summary(run_id: str, reused: dict[str, int], restored: int,
             reruns: dict[str, dict[str, int]], ran: int, err: bool) -> None:
    click.echo(f"run {run_id}: {sum(reused.values())} call(s) reused from the earlier run "
               f"({restored} restored), {ran} ran again", err=err)
    for line in summary_lines(reused, reruns):
        click.echo(f"  {line}", err=err)


def _short(params: str, limit: int = 120) -> str:
    return params if len(params) <= limit else params[:limit - 3] + "..."
