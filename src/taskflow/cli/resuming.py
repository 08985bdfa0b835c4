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

from ..errors import RecordDamaged, RunNotFound
from ..journal.reader import Journal, list_runs, resolve_run, runs_root
from ..runtime.recovery.restore import rerun_lines
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
    unknown: list[str] = []     # runs with a resume log whose journal cannot say their script
    for r in reversed(list_runs(root)):      # newest first
        run_path = os.path.join(root, r["run_id"])
        has_log = os.path.exists(os.path.join(run_path, "resume.log"))
        try:
            if r.get("state") == "damaged":
                raise RecordDamaged(r.get("reason") or "")
            with Journal(run_path) as j:
                row = j.run()
        except Exception:  # noqa: BLE001 - an unreadable journal is not the run we want
            if has_log:
                unknown.append(r["run_id"])
            continue
        if row.get("cwd") != cwd:
            continue
        try:
            argv = json.loads(row.get("argv") or "[]")
        except ValueError:
            continue
        if any(os.path.abspath(os.path.join(cwd, a)) == want for a in argv
               if isinstance(a, str)) and has_log:
            if unknown:             # newer, and perhaps this script's: said, not passed over
                click.echo(f"taskflow: --resume continues run {r['run_id']}, the latest known "
                           f"to be of {script}; {_damaged(unknown)}: to continue that one "
                           f"instead, name it: --resume {unknown[0]}", err=True)
            return run_path
    if unknown:
        raise click.UsageError(
            f"--resume: no run under {root} is known to be of {script} in {cwd}: "
            f"{_damaged(unknown)}; if it is this script's, name it: --resume {unknown[0]}")
    raise click.UsageError(
        f"--resume: no earlier resumable run of {script} in {cwd} (runs under {root}; "
        f"one started --no-resumable cannot be); name a run: "
        f"--resume RUN_ID (see `taskflow runs`)")


def _damaged(runs: list[str]) -> str:
    """'the journal of run R is damaged, ...' for runs whose resume log remains."""
    names = ", ".join(runs[:3]) + (f" and {len(runs) - 3} more" if len(runs) > 3 else "")
    one = len(runs) == 1
    return (f"the journal of run{'' if one else 's'} {names} {'is' if one else 'are'} damaged, "
            f"so which script {'it' if one else 'they'} ran cannot be read, but "
            f"{'its' if one else 'their'} resume.log is there")


@click.command(epilog=examples("taskflow explain                 # the latest run",
                               "taskflow explain 20250101-1200"))
@click.argument("run", required=False)
@run_dir_option
def explain(run: str | None, run_dir: str | None) -> None:
    """Why the calls of a resumed RUN ran again, one line per task name (default: latest)."""
    try:
        path = resolve_run(run, runs_root(run_dir))
    except RunNotFound as exc:
        raise click.ClickException(str(exc)) from None
    with Journal(path) as j:
        reruns, restored = j.resume_counts()
        run_id = j.run().get("run_id", os.path.basename(path))
    if not reruns and not restored:
        click.echo(f"run {run_id} was not resumed from an earlier run (taskflow run --resume)")
        return
    ran = sum(sum(v.values()) for v in reruns.values())
    click.echo(f"run {run_id}: {restored} task(s) restored from the earlier run, {ran} ran "
               f"again")
    for line in rerun_lines(reruns):
        click.echo(f"  {line}")
