"""``taskflow runs`` (the runs kept, which is which) and ``taskflow clean`` (remove old ones).

``runs`` reads each run's journal: its id, the script and its arguments (from
the command line the journal keeps, read with ``taskflow run``'s own option
table), the state the journal has, when it started, how long it took and
its tasks. ``clean`` removes run directories the options pick, never one in
use: a run holds its directory's lock while it goes on, and a run resumed
from another holds that one's (:mod:`taskflow.runtime.recovery.runlock`).
"""
from __future__ import annotations

import datetime
import os
import re
import shlex
import shutil
import sys
import time
from typing import Any

import click

from ..journal.reader import Journal, list_runs, run_ids
from ..journal.root import runs_root
from .options import examples
from .observe import run_dir_option

_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_AGE = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")


# -- which script, which arguments ---------------------------------------------------------
def _is_taskflow(argv0: str) -> bool:
    base = os.path.basename(argv0)
    return base == "taskflow" or argv0.replace(os.sep, "/").endswith(
        ("taskflow/__main__.py", "taskflow/cli/__main__.py"))


def script_and_args(argv: list[str], cwd: str = "") -> tuple[str, list[str]]:
    """The script a run ran and its arguments, from the command line in its journal:
    ``taskflow run [options] script args`` or ``python script args`` (``cwd``: where it
    ran, to tell ``--resume wf.py`` from ``--resume RUN_ID`` as ``run`` did)."""
    if not argv:
        return "?", []
    if len(argv) < 2 or argv[1] != "run" or not _is_taskflow(argv[0]):
        return argv[0], list(argv[1:])
    from .options import OptionalValueCommand
    from .run import run as run_command
    from .runcompss import translate, wants_compat
    rest = list(argv[2:])
    takes_value = {o for p in run_command.params if isinstance(p, click.Option)
                   and not p.is_flag and not p.count for o in p.opts}
    try:
        if wants_compat(rest, takes_value):
            rest, _ = translate(rest, takes_value)
    except Exception:  # noqa: BLE001 - a display: the arguments as they are
        pass
    optional = OptionalValueCommand.optional_value_options
    i = 0
    while i < len(rest):
        a = rest[i]
        if a == "--":
            i += 1
            break
        if not a.startswith("-"):
            break
        if a in optional:
            nxt = rest[i + 1] if i + 1 < len(rest) else ""
            if a == "--resume":     # run looked for the file where it ran; it may be gone
                value = not nxt.endswith(".py") and not os.path.isfile(os.path.join(cwd, nxt))
            else:
                value = optional[a][1](nxt)
            i += 2 if nxt and not nxt.startswith("-") and value else 1
        else:
            i += 2 if a in takes_value else 1
    return (rest[i], rest[i + 1:]) if i < len(rest) else ("?", [])


# -- taskflow runs ---------------------------------------------------------------------------
def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _took(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.2f} s"
    m, s = divmod(int(seconds), 60)
    return f"{m}m {s:02d}s" if m < 60 else f"{m // 60}h {m % 60:02d}m"


def run_row(r: dict[str, Any]) -> dict[str, str]:
    """The columns of one run (a row of :func:`~taskflow.journal.reader.list_runs`)."""
    import json
    try:
        argv = json.loads(r.get("argv") or "[]")
    except ValueError:
        argv = []
    cwd = r.get("cwd") or ""
    script, args = script_and_args([str(a) for a in argv] if isinstance(argv, list) else [], cwd)
    if os.path.isabs(script) and cwd and script.startswith(cwd.rstrip(os.sep) + os.sep):
        script = os.path.relpath(script, cwd)
    t0, t1 = r.get("t_start"), r.get("t_end")
    if t0 and not t1 and r.get("state") == "running":
        t1 = time.time()
    c = r.get("counts") or {}
    total, done, failed = c.get("total", 0), c.get("DONE", 0), c.get("FAILED", 0)
    tasks = f"{done}/{total} done" + (f", {failed} failed" if failed else "")
    state = str(r.get("state"))
    if state == "finished" and r.get("reason"):     # failures the script handled
        state = "finished, failures handled"
    return {"run": r["run_id"], "script": _cut(script, 32), "args": _cut(shlex.join(args), 40),
            "state": _cut(state, 30), "started": _when(t0),
            "duration": _took(t1 - t0) if t0 and t1 else "-", "tasks": tasks}


def _when(t: float | None) -> str:
    return datetime.datetime.fromtimestamp(t).strftime("%Y-%m-%d %H:%M:%S") if t else "-"


COLUMNS = ("run", "script", "args", "state", "started", "duration", "tasks")


@click.command(epilog=examples("taskflow runs", "taskflow runs --run-dir /scratch/me/runs"))
@run_dir_option
def runs(run_dir: str | None) -> None:
    """The runs kept under the run directory, oldest first: id, script, arguments, state,
    start, duration, tasks."""
    rows = [run_row(r) for r in list_runs(run_dir)]
    if not rows:
        click.echo(f"no runs under {runs_root(run_dir)}")
        return
    widths = {c: max(len(c), *(len(r[c]) for r in rows)) for c in COLUMNS}
    right = {"duration"}
    for r in [dict(zip(COLUMNS, (c.upper() for c in COLUMNS))), *rows]:
        click.echo("  ".join(r[c].rjust(widths[c]) if c in right else r[c].ljust(widths[c])
                             for c in COLUMNS).rstrip())


# -- taskflow clean --------------------------------------------------------------------------
def parse_age(text: str) -> float:
    """Seconds in ``7d``, ``12h``, ``30m``, ``90s``, ``2w`` or a sum (``1d12h``)."""
    s = text.strip().lower()
    if not s or _AGE.sub("", s) != "":
        raise ValueError(f"{text!r}: expected an age such as 7d, 12h, 30m, 90s or 2w "
                         f"(a number and a unit: s, m, h, d, w; 1d12h adds up)")
    return sum(float(n) * _AGE_UNITS[u] for n, u in _AGE.findall(s))


def _age_option(ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return parse_age(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc), ctx, param) from None


def _disk_usage(path: str) -> int:
    """Bytes a directory holds on disk (as du counts them)."""
    total = 0
    for root, dirs, files in os.walk(path):
        for name in dirs + files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            total += getattr(st, "st_blocks", 0) * 512 or st.st_size
    return total


def _size(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def _run_info(path: str) -> dict[str, Any]:
    try:
        with Journal(path) as j:
            return j.run()
    except Exception as exc:  # noqa: BLE001 - a damaged journal is still a run directory
        return {"state": f"unreadable ({exc})"}


@click.command(epilog=examples(
    "taskflow clean --older-than 7d          # runs that ended more than a week ago",
    "taskflow clean --keep 10                # all but the 10 newest",
    "taskflow clean --failed --older-than 1d",
    "taskflow clean --all --dry-run          # what would go"))
@click.option("--older-than", "older_than", metavar="AGE", callback=_age_option,
              help="Only runs that ended (or, unfinished, started) more than AGE ago: 7d, "
                   "12h, 30m, 90s, 2w.")
@click.option("--keep", type=click.IntRange(min=0), default=None, metavar="N",
              help="Keep the N newest runs, whatever the other options pick.")
@click.option("--failed", is_flag=True, help="Only runs whose journal says they failed.")
@click.option("--all", "all_", is_flag=True,
              help="Every run not in use (needed when no other option says which).")
@click.option("--dry-run", "-n", is_flag=True, help="Say what would be removed; remove nothing.")
@run_dir_option
def clean(older_than: float | None, keep: int | None, failed: bool, all_: bool,
          dry_run: bool, run_dir: str | None) -> None:
    """Remove run directories (journal, data, pictures) under the run directory.

    A run in use (going on, or being resumed by another) is never removed: it
    holds its directory's lock. Says what it removed and how much space that
    freed.
    """
    from ..runtime.recovery.runlock import RunLock, has_lock_file, holder
    if older_than is None and keep is None and not failed and not all_:
        raise click.UsageError("say which runs to remove: --older-than AGE, --keep N, "
                               "--failed, or --all (and --dry-run to see them first)")
    root = runs_root(run_dir)
    ids = run_ids(run_dir)
    if not ids:
        click.echo(f"nothing to remove: no runs under {root}")
        return
    newest = set(ids[len(ids) - keep:]) if keep else set()
    now = time.time()
    removed: list[tuple[str, int]] = []
    errors = in_use = 0
    for rid in ids:
        if rid in newest:
            continue
        path = os.path.join(root, rid)
        info = _run_info(path)
        state = str(info.get("state"))
        if failed and state != "failed":
            continue
        if older_than is not None:
            when = info.get("t_end") or info.get("t_start") or os.path.getmtime(path)
            if now - when <= older_than:
                continue
        had_lock = has_lock_file(path)
        try:
            lock = RunLock.take(path)
        except OSError as exc:
            click.echo(f"kept {rid}: its lock cannot be taken here ({exc}); remove it by "
                       f"hand once it is over")
            in_use += 1
            continue
        if lock is None:
            who = holder(path)
            click.echo(f"kept {rid}: in use{f' ({who})' if who else ''}")
            in_use += 1
            continue
        if state == "running" and not had_lock:     # the journal says so and no lock
            lock.release(remove=True)               # tells: a run of an older taskflow
            click.echo(f"kept {rid}: its journal says running (pid {info.get('pid')} on "
                       f"{info.get('hostname')}) and it keeps no lock to tell")
            in_use += 1
            continue
        size = _disk_usage(path)
        if dry_run:
            lock.release(remove=not had_lock)
            click.echo(f"would remove {rid} ({state}, started {_when(info.get('t_start'))}, "
                       f"{_size(size)})")
            removed.append((rid, size))
            continue
        try:
            shutil.rmtree(path)
        except OSError as exc:
            click.echo(f"could not remove {rid}: {exc}", err=True)
            errors += 1
            continue
        finally:
            lock.release()
        click.echo(f"removed {rid} ({state}, started {_when(info.get('t_start'))}, "
                   f"{_size(size)})")
        removed.append((rid, size))
    freed = _size(sum(s for _, s in removed))
    kept = f"; kept {in_use} in use" if in_use else ""
    if not removed and not errors:
        click.echo(f"nothing to remove under {root}: {len(ids)} run(s), "
                   + (f"{in_use} in use, " if in_use else "")
                   + ("none other" if in_use else "none") + " picked by these options")
    elif dry_run:
        click.echo(f"would remove {len(removed)} run(s) from {root}, freeing {freed}{kept}")
    else:
        click.echo(f"removed {len(removed)} run(s) from {root}, {freed} freed{kept}")
    if errors:
        raise SystemExit(1)


COMMANDS = [runs, clean]
__all__ = ["COMMANDS", "parse_age", "script_and_args"]


@click.command("rerun", epilog=examples(
    "taskflow rerun 20261205-1 7          # task 7 of that run, again, here",
    "taskflow rerun latest 7 --pdb        # and stop in the debugger where it raises",
    "taskflow rerun latest 7 --node n2    # on node n2 of the run's cluster file"))
@click.argument("run")
@click.argument("task_id", type=int)
@click.option("--pdb", "use_pdb", is_flag=True, help="Stop in pdb at the frame that raised.")
@click.option("--node", default=None, metavar="NODE",
              help="Run it on that node of the cluster file instead (only its agent starts; "
                   "the node must share this machine's filesystem).")
@click.option("--cluster", default=None, type=click.Path(exists=True, dir_okay=False),
              help="With --node: the cluster file (default: the one the run was given).")
@click.option("--run-dir", default=None, help="Where the runs are (default: ./.taskflow/runs "
                                              "or TASKFLOW_RUN_DIR).")
def rerun(run: str, task_id: int, use_pdb: bool, node: str | None, cluster: str | None,
          run_dir: str | None) -> None:
    """Run task TASK_ID of RUN again in this process with the inputs it had (a failed task's
    record: docs/guide/debugging.md) and say whether it fails the same way."""
    from ..debugging.rerun import rerun_cli
    from ..errors import UsageError
    try:
        status = rerun_cli(run, task_id, use_pdb, node, cluster, run_dir)
    except UsageError as exc:
        raise click.ClickException(str(exc)) from None
    sys.exit(status)


COMMANDS.append(rerun)
