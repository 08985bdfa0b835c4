"""``taskflow map [OPTIONS] -- COMMAND ARGS...``: one program over many inputs, no script.

The options are read into sources, an item plan and a task
(:mod:`taskflow.farm`); everything is checked before the runtime starts,
then the run is :func:`.driver.drive`'s, as ``taskflow run``'s is, with a
launcher whose "script" calls the items (:class:`MapLauncher`). The node
options are ``run``'s own (the same click options: one definition); the exit
status is 0 when every item ended well, else 1 with the failed items listed
(2: the options cannot make a map; 128 + the signal: interrupted).
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from typing import TYPE_CHECKING, Any, NoReturn

import click

from .. import diagnostics
from ..errors import UsageError
from .driver import Launcher, RunPlan, ScriptEnd, drive
from .nodes import cluster_options, slurm_cli_provider
from .options import OptionalValueCommand, examples
from .run import run as _run_command

if TYPE_CHECKING:
    from ..console.view import RunView
    from ..farm.runner import MapRunner

SOURCES = ("--range", "--each-line", "--from-json")
# run's options that mean the same for a map (the same click objects: one definition)
SHARED = ("workers", "local_nodes", "crash_limit", "grace", "resumable", "resume_check",
          "checkpoint", "adopt_grace", "explain", "placement", "run_dir", "memory_limit",
          "log_level", "progress", "graph_", "trace_", "monitor", "cluster", "slurm",
          "slurm_nodes", "slurm_opts")
_TIME = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*(s|m|h|)\s*$")


class MapCommand(OptionalValueCommand):
    """Keeps the order the source options were given in (the cross product's order)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        order: list[str] = []
        for a in args:
            if a == "--":
                break
            name = a.split("=", 1)[0]
            if name in SOURCES:
                order.append(name)
        ctx.meta["tf_map_order"] = order
        return super().parse_args(ctx, args)


@click.command("map", cls=MapCommand,
               context_settings={"ignore_unknown_options": True,
                                 "allow_interspersed_args": False},
               epilog=examples(
                   "taskflow map --range 1-100 -- ./simulate --seed {}",
                   "taskflow map --each-line files.txt --in {} --stdout {}.sha -- sha256sum {}",
                   "taskflow map --from-json cases.json -- ./solve --n {n} --tol {tol}",
                   "taskflow map --range 1-3 --range 1-2 -- echo {1} {2}   # cross product",
                   "taskflow map --resume --range 1-100 -- ./simulate --seed {}"))
@click.option("--range", "ranges", multiple=True, metavar="A-B[:STEP]",
              help="Items: the integers A..B (every STEP-th); several parts: 1-10,20,30-40:5.")
@click.option("--each-line", "lines", multiple=True, metavar="FILE",
              help="Items: the lines of FILE (read as the map goes, never whole).")
@click.option("--from-json", "jsons", multiple=True, metavar="FILE",
              help="Items: the elements of the JSON list in FILE; objects give {field} "
                   "placeholders.")
@click.option("--in", "ins", multiple=True, metavar="TEMPLATE",
              help="An input file of each item (placeholders allowed; repeatable): it must "
                   "exist; where it is an argument of the command the program gets its path.")
@click.option("--out", "outs", multiple=True, metavar="TEMPLATE",
              help="An output file of each item, an argument of the command (repeatable): "
                   "written as a new version, put in place when the item ends well.")
@click.option("--stdout", "stdout", default=None, metavar="TEMPLATE",
              help="Each item's standard output into this file (an output file).")
@click.option("--stderr", "stderr", default=None, metavar="TEMPLATE",
              help="Each item's standard error into this file (an output file).")
@click.option("--cpus", type=click.IntRange(min=1), default=None,
              help="Cores each item holds (default 1).")
@click.option("--memory", default=None, metavar="AMOUNT",
              help="Memory each item needs: GB or an amount (512MB, 4GiB).")
@click.option("--resource", "resources", multiple=True, metavar="NAME=AMOUNT",
              help="A named resource each item needs (repeatable).")
@click.option("--time-out", "time_out", default=None, metavar="SECONDS",
              help="An item running longer is stopped and fails (a number of seconds, or "
                   "with a unit: 90s, 10m, 2h).")
@click.option("--retries", type=click.IntRange(min=0), default=None,
              help="Times a failed item is run again (default 0).")
@click.option("--max-fails", type=click.IntRange(min=1), default=None, metavar="N",
              help="Stop the map when N items have failed: no more start, the rest are "
                   "cancelled (default: every item runs).")
@click.option("--fail-fast", is_flag=True, help="--max-fails 1.")
@click.option("--plan", "plan_only", is_flag=True,
              help="Print what the map would run (the items' count, the first command lines, "
                   "their files; with --resume, what would be reused) and start nothing.")
@click.option("--resume", "resume", default=None, metavar="[RUN_ID]",
              help="Continue an earlier map (default: the latest of the same command here): "
                   "items it finished are restored, running ones adopted, the rest run.")
@click.argument("command", nargs=-1, type=click.UNPROCESSED)
def map_command(ranges: tuple[str, ...], lines: tuple[str, ...], jsons: tuple[str, ...],
                ins: tuple[str, ...], outs: tuple[str, ...], stdout: str | None,
                stderr: str | None, cpus: int | None, memory: str | None,
                resources: tuple[str, ...], time_out: str | None, retries: int | None,
                max_fails: int | None, fail_fast: bool, plan_only: bool, resume: str | None,
                command: tuple[str, ...], **shared: Any) -> None:
    """Run COMMAND once per item: of a range, of each line of a file, of each element of a
    JSON list, or of their cross product, with GNU Parallel's placeholders ({} the item,
    {#} its index from 1, {name} a field, {.} {/} {//} {/.}, {{ and }} literal braces).
    Each item is a task of one run: `taskflow status`, `logs RUN --item N`, `report`,
    `monitor` and `--resume` work on it as on any run."""
    from ..farm.items import check_items, plan_items
    from ..farm.task import map_task
    meta = click.get_current_context().meta
    diagnostics.setup(shared["log_level"])
    try:
        sources = _sources(meta.get("tf_map_order") or [], ranges, lines, jsons)
        plan = plan_items(list(command), sources, ins, outs, stdout, stderr)
        amounts = _resources(resources)
        gb = _memory(memory)
        seconds = _seconds(time_out)
        if not (meta.get("tf_cluster") or meta.get("tf_slurm")):
            _check_program(plan.program)
        check_items(plan)
        task = map_task(plan, cpus, gb, seconds, retries, amounts)
    except UsageError as exc:
        _refuse(str(exc))
    rt_opts = cluster_options(meta.get("tf_cluster"), shared["placement"])
    if meta.get("tf_slurm"):
        opts = tuple(meta.get("tf_slurm_opts") or ())
        if meta["tf_slurm"] == "auto" and shared["run_dir"]:
            opts += (f"history={shared['run_dir']}",)
        rt_opts["providers"] = [slurm_cli_provider(meta["tf_slurm"], meta["tf_slurm_nodes"],
                                                   opts)]
    if shared["memory_limit"]:
        rt_opts["memory_limit"] = True
    resume_dir = map_to_resume(resume, list(command), shared["run_dir"]) \
        if resume is not None else None
    runtime: dict[str, Any] = dict(
        workers=shared["workers"], nodes=shared["local_nodes"] or 1,
        run_dir=shared["run_dir"], crash_limit=shared["crash_limit"],
        resumable=shared["resumable"], resume=resume_dir,
        resume_check=shared["resume_check"], checkpoint=shared["checkpoint"],
        adopt_grace=shared["adopt_grace"], **rt_opts)
    from ..farm.runner import MapRunner
    runner = MapRunner(plan, task, 1 if fail_fast else max_fails)
    if plan_only:       # the items as a plan: every program stubbed, in this process
        from ..debugging.planning import format_plan, plan_calls
        from .run import _here_only
        _here_only("--plan", None, meta)
        made = plan_calls(f"taskflow map -- {shlex.join(command)}", runner.run, runtime)
        click.echo(format_plan(made))
        raise SystemExit(1 if made.error else 0)
    run_plan = RunPlan(plan.program, tuple(command[1:]), runtime, grace=shared["grace"],
                       explain=shared["explain"], progress=shared["progress"],
                       graph=shared["graph_"], trace=shared["trace_"],
                       monitor=shared["monitor"])
    drive(run_plan, MapLauncher(runner, len(plan), shared["run_dir"]))


for _p in _run_command.params:         # run's node and run options, shared
    if _p.name in SHARED:
        map_command.params.append(_p)


class MapLauncher(Launcher):
    """A map's side of :func:`.driver.drive`: its items in the script's place, the failed
    items listed at the end, the resume command of a map."""

    def __init__(self, runner: MapRunner, count: int, run_dir: str | None) -> None:
        self.runner, self.count, self.run_dir = runner, count, run_dir
        self.run_id = ""
        self.rt: RunView | None = None

    def started(self, rt: RunView) -> None:
        self.run_id = rt.run_id
        self.rt = rt

    def run_script(self, script: str) -> None:
        self.runner.run()

    def script_ended(self, exc: BaseException) -> ScriptEnd:
        from ..farm.runner import MaxFails
        from ..runtime.state import RunState
        if isinstance(exc, (MaxFails, UsageError)) and isinstance(self.rt, RunState):
            self.rt.fail_run(str(exc))      # the journal's reason (the first one given)
        if isinstance(exc, MaxFails):
            return ScriptEnd(1, None, cancel=str(exc))
        if isinstance(exc, UsageError):     # the first item's call-time check: one error,
            return ScriptEnd(2, None, cancel=str(exc))      # said as the run's reason
        return super().script_ended(exc)

    def interrupted_summary(self, rt: RunView, plan: RunPlan) -> str:
        from . import interrupts
        return interrupts.interrupted_summary(rt, plan.script, plan.script_args,
                                              command=resume_command(rt.run_id, rt.run_dir))

    def closing(self, status: int) -> None:
        t = self.runner.tally
        if status >= 128 or status == 2 or not t.failed and not (status and
                                                                 t.called < self.count):
            return          # (an interrupt's summary or the reason the map stopped said it)
        done = t.ended - t.failed - t.cancelled
        not_run = self.count - done - t.failed
        click.echo(f"taskflow map: {t.failed} of {self.count} item(s) failed, {done} ended "
                   f"well" + (f", {not_run} did not run" if not_run > 0 else ""), err=True)
        where = f" --run-dir {shlex.quote(self.run_dir)}" if self.run_dir else ""
        for f in t.listed:
            code = f"exit code {f.code}" if f.code is not None else f.why
            click.echo(f"  item {f.index}: {code}; its output: taskflow logs {self.run_id} "
                       f"--item {f.index}{where}", err=True)
        if t.failed > len(t.listed):
            click.echo(f"  ... and {t.failed - len(t.listed)} more (taskflow status "
                       f"{self.run_id}{where})", err=True)


def resume_command(run_id: str, run_dir: str) -> str:
    """The command that continues map run ``run_id`` (in ``run_dir``), options kept."""
    from ..journal.reader import Journal
    from .observe import resume_command_of
    with Journal(run_dir) as j:
        again = resume_command_of(j.run(), run_dir)
    return again or f"taskflow map --resume {run_id} ..."


def map_to_resume(which: str, command: list[str], run_dir: str | None) -> str:
    """The directory of the map to continue: ``which`` (a run id), or the latest resumable
    map of the same command started in this directory."""
    from ..errors import RunNotFound
    from ..journal.reader import Journal, resolve_run, run_ids, runs_root
    from ..runtime.recovery.log import LOG_NAME
    root = runs_root(run_dir)
    if which != "latest":
        try:
            return resolve_run(which, root)
        except RunNotFound as exc:
            _refuse(f"--resume {which}: {exc}")
    cwd = os.getcwd()
    for rid in reversed(run_ids(root)):
        path = os.path.join(root, rid)
        if not os.path.exists(os.path.join(path, LOG_NAME)):
            continue
        try:
            with Journal(path) as j:
                row = j.run()
            argv = json.loads(row.get("argv") or "[]")
        except Exception:  # noqa: BLE001 - a damaged run is not the one
            continue
        if row.get("cwd") == cwd and command_of(argv) == command:
            return path
    _refuse(f"--resume: no earlier resumable map of {shlex.join(command)} in {cwd} (runs "
            f"under {root}); name a run: --resume RUN_ID (see `taskflow runs`)")


def command_of(argv: list[Any]) -> list[str] | None:
    """The COMMAND of a ``taskflow map`` command line (a run's argv), or None."""
    if len(argv) < 2 or argv[1] != "map":
        return None
    try:
        ctx = map_command.make_context("map", [str(a) for a in argv[2:]],
                                       resilient_parsing=True)
    except click.ClickException:
        return None
    return list(ctx.params.get("command") or ())


def _sources(order: list[str], ranges: tuple[str, ...], lines: tuple[str, ...],
             jsons: tuple[str, ...]) -> list[Any]:
    from ..farm.sources import JsonSource, LinesSource, RangeSource
    given = {"--range": list(ranges), "--each-line": list(lines), "--from-json": list(jsons)}
    make = {"--range": RangeSource, "--each-line": LinesSource, "--from-json": JsonSource}
    if not order:
        order = [o for o in SOURCES for _ in given[o]]
    out = []
    for opt in order:
        if given[opt]:
            out.append(make[opt](given[opt].pop(0)))
    if not out:
        raise UsageError("no items: give --range A-B, --each-line FILE or "
                         "--from-json FILE")
    return out


def _resources(given: tuple[str, ...]) -> dict[str, int | float] | None:
    """``--resource NAME=AMOUNT`` items as ``@constraint(resources=)`` takes them, checked
    as it checks them (graph.resources)."""
    if not given:
        return None
    from ..graph.resources import from_text
    names = [r.partition("=")[0].strip() for r in given]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise UsageError(f"--resource {twice[0]} is given twice")
    return from_text(list(given), "--resource")


def _memory(text: str | None) -> float | None:
    if text is None:
        return None
    from ..wire.budget import to_bytes
    try:
        if text.strip().endswith("%"):
            raise ValueError(text)
        return to_bytes(float(text) if _is_number(text) else text, 1.0, "--memory") / 1e9
    except ValueError:
        raise UsageError(f"--memory {text!r}: give an amount above 0, in GB (4, 0.5) or with "
                         f"a unit (512MB, 4GiB)") from None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _seconds(text: str | None) -> float | None:
    if text is None:
        return None
    m = _TIME.match(text)
    value = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600}[m.group(2)] if m else 0.0
    if not value > 0:
        raise UsageError(f"--time-out {text!r}: give seconds above 0 (90, 90s, 10m, 2h)")
    return value


def _check_program(program: str) -> None:
    """The program exists here (local nodes see this machine's PATH): one error, before
    anything runs, rather than one per item."""
    if os.sep in program:
        if not os.path.isfile(program) or not os.access(program, os.X_OK):
            raise UsageError(f"the program {program} does not exist or is not executable")
    elif shutil.which(program) is None:
        raise UsageError(f"the program {program!r} was not found on PATH "
                         f"({os.environ.get('PATH', '')}); give its path or fix PATH")


def _refuse(message: str) -> NoReturn:
    click.echo(f"taskflow map: {message}", err=True)
    raise SystemExit(2)
