"""The one body of ``taskflow run``: start the runtime, run the script, stop, report, exit.

``taskflow run`` and ``taskflow run --compat pycompss`` build a :class:`RunPlan`
from their options (:mod:`.run`) and call :func:`drive` with a
:class:`Launcher`, which holds what differs between them: taskflow's own
(this class) and runcompss's (:class:`.runcompss.Runcompss`: its header and
closing lines, the application's globals, its exit status). Everything else
is one path for both, interrupts first (:mod:`.interrupts`): the first Ctrl-C
or SIGTERM stops the run cleanly, giving running tasks ``--grace`` seconds,
and the exit status is 128 + the signal.
"""
from __future__ import annotations

import os
import runpy
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

import click

from ..errors import UsageError
from . import interrupts
from .signals import Signals
from .observe import run_finished, run_started

if TYPE_CHECKING:
    from ..console.view import RunView
    from ..runtime.runtime import Runtime


@dataclass
class RunPlan:
    """What ``taskflow run`` was asked to do, its options read."""

    script: str
    script_args: tuple[str, ...]
    runtime: dict[str, Any]         # Runtime's keywords
    grace: float = 10.0             # seconds running tasks get when the run is interrupted
    explain: bool = False           # a resumed run says why calls ran again
    progress: bool | None = None    # progress on stderr (None: on; bars on a terminal)
    graph: bool = False             # pictures written into the run's directory at the end
    trace: bool = False
    monitor: int | None = None      # the web monitor's port (0: any free one)
    inline: bool = False            # every task in this process, in call order (debugging)
    trace_file: str | None = None   # a row per task attempt, written as each one ends
    crate: str | None = None        # a Workflow Run Crate at the end: its path ("": the run
    #                                 directory's crate/; "{run_id}" is replaced)
    metrics: int | None = None      # /metrics for Prometheus on this port (0: any free one)


class ScriptEnd(NamedTuple):
    """How the script ended when it raised (SystemExit included)."""

    status: int = 0                     # the exit status it asks for (0: it ended well)
    error: BaseException | None = None  # what the end-of-run report shows as its error
    cancel: str | None = None           # cancel every task for this reason, do not wait


class Launcher:
    """What a launcher adds around the run: nothing, for ``taskflow run`` itself."""

    # what `taskflow run` needs besides --resume to continue the run the same way
    resume_options: tuple[str, ...] = ()

    def log_level(self, level: str) -> str:
        """The log level, from ``--log-level`` (``level``) and the launcher's own options."""
        return level

    def prepare(self) -> None:
        """Before the nodes are read from the options (logging is set up)."""

    def nodes(self, rt_opts: dict[str, Any], other_nodes: bool) -> None:
        """Nodes the launcher's options describe, into ``rt_opts`` (``other_nodes``:
        ``--cluster`` or ``--slurm`` describe some)."""

    def adjust(self, plan: RunPlan) -> None:
        """The launcher's say on the plan before the run starts."""

    def refuse(self, message: str) -> NoReturn:
        """Options that cannot make a run (before it starts): say so, exit with status 2."""
        raise click.UsageError(message)

    def starting(self) -> None:
        """Just before the runtime starts."""

    def start_failed(self) -> None:
        """The runtime did not start (already said why); the exit status is 2."""

    def started(self, rt: RunView) -> None:
        """The runtime runs; the script is about to."""

    def run_script(self, script: str) -> None:
        runpy.run_path(script, run_name="__main__")

    def script_ended(self, exc: BaseException) -> ScriptEnd:
        """The script raised ``exc`` (not an interrupt); called in its ``except`` block."""
        if isinstance(exc, SystemExit):     # the script's own status, as Python exits
            from ..runtime.verdict import exit_status
            if exc.code is not None and not isinstance(exc.code, int):
                click.echo(str(exc.code), err=True)
            return ScriptEnd(exit_status(exc))
        return ScriptEnd(1, exc)

    def ending(self, rt: RunView) -> None:
        """The run has stopped; its report comes next."""

    def closing(self, status: int) -> None:
        """The last words, before exiting with ``status``."""

    def interrupted_summary(self, rt: RunView, plan: RunPlan) -> str:
        """The last lines of an interrupted run: what it did, and how to continue it."""
        return interrupts.interrupted_summary(rt, plan.script, plan.script_args,
                                              self.resume_options)


def drive(plan: RunPlan, launcher: Launcher) -> NoReturn:
    """Run ``plan`` and exit: the script's status, ``stop(code=N)``'s N, 1 when a task
    failed or the run's record could not be kept, 128 + the signal when interrupted, 2
    when the runtime could not start (docs/guide/failures.md#exit-status)."""
    from ..debugging import inline
    script_dir = os.path.dirname(os.path.abspath(plan.script))
    if "providers" not in plan.runtime and not (plan.inline or inline.wanted()):
        from ..providers import prestart        # its local agent loads while the runtime does
        prestart.begin(first=script_dir)
    from ..console.lines import start as start_progress
    from ..runtime.runtime import Runtime
    try:
        rt = (inline.InlineRuntime if plan.inline or inline.wanted() else Runtime)(
            **plan.runtime)
    except UsageError as exc:
        launcher.refuse(str(exc))
    tracer = _trace_file(rt, plan.trace_file, launcher)
    # before the nodes start: they get the master's sys.path, so the modules beside the
    # script import there too
    sys.path.insert(0, script_dir)
    launcher.starting()
    t0 = time.time()
    try:
        rt.start()
    except Exception as exc:  # noqa: BLE001 - say why, whatever it was
        click.echo(f"taskflow: could not start the runtime: {exc}", err=True)
        launcher.start_failed()
        sys.exit(2)
    mon = run_started(rt, plan.monitor, plan.metrics)
    launcher.started(rt)
    # on unless --no-progress: bars on a terminal, plain lines elsewhere (a log, CI)
    prog = start_progress(rt, sys.stderr.isatty()) if plan.progress is not False else None
    end = ScriptEnd()
    sys.argv = [plan.script, *plan.script_args]
    signals = Signals(rt, plan.grace, lambda signum: launcher.interrupted_summary(rt, plan))
    signals.install()               # the signal itself stops the run (signals.py)
    try:
        launcher.run_script(plan.script)
    except (KeyboardInterrupt, interrupts.Terminated):
        pass                        # (the signal is the watcher's: signals.first)
    except BaseException as exc:  # noqa: BLE001 - whatever the script raised, SystemExit too
        if not signals.first:       # (after a signal: what the script made of it)
            end = launcher.script_ended(exc)
            rt.script_ended(exc)    # the journal says the run failed, and why
    if not signals.first and end.cancel is None and not rt.stopped:
        try:
            rt.wait_all()           # the end of the script waits for every task
        except (KeyboardInterrupt, interrupts.Terminated):
            pass
    signals.script_done()
    try:
        if signals.first:
            pass                    # the signal stops the run (signals.finish waits for it)
        elif end.cancel is not None:
            rt.cancel_all(end.cancel)
            rt.stop(wait=False)
        else:
            rt.stop()
        signals.finish()
    finally:
        if prog is not None:
            prog.close()
        if tracer is not None:          # (the bus delivered its last events in stop)
            tracer.close()
    signum = signals.first
    launcher.ending(rt)
    status = _report(rt, plan, launcher, signum, end, time.time() - t0)
    run_finished(rt, plan.graph, plan.trace, mon)
    if plan.crate is not None:
        _crate(rt, plan.crate)
    launcher.closing(status)
    sys.exit(status)


def _trace_file(rt: Runtime, path: str | None, launcher: Launcher) -> Any:
    """``--trace-file``: its writer, subscribed before anything runs (None: not asked)."""
    if path is None:
        return None
    from ..observe.attempts.fields import pick
    from ..observe.attempts.live import TraceFile
    try:
        return TraceFile(path, pick(None), rt.bus)
    except OSError as exc:
        launcher.refuse(f"--trace-file {path}: {exc.strerror or exc}")


def _report(rt: Runtime, plan: RunPlan, launcher: Launcher, signum: int, end: ScriptEnd,
            took: float) -> int:
    """The end-of-run report on stderr; returns the exit status."""
    if signum:
        click.echo(launcher.interrupted_summary(rt, plan), err=True)
        return 128 + signum
    from ..console.bars import summary
    from ..console.failures import end_of_run
    if rt.recovery.resumer is not None:
        _resume_report(rt, plan.explain)
    # (a traceback says it otherwise; a failed record was said when it happened, and below)
    if end.error is None and rt.end_reason is not None and rt.dead is None:
        click.echo(f"taskflow: {rt.end_reason}", err=True)
    # every failure once: the failed tasks' blocks, then the summary line
    click.echo(end_of_run(rt, end.error, summary(rt, took)), err=True)
    if rt.exit_code:                # stop(code=N): N
        return rt.exit_code
    return 1 if end.status == 0 and rt.failed else end.status


def _crate(rt: Runtime, out: str) -> None:
    """The run's crate (``--crate``); a crate that cannot be written is said, and the run's
    exit status stays the run's (as for the pictures)."""
    if rt.journal is None:
        click.echo("taskflow: no crate: the run kept no journal", err=True)
        return
    from .crate import write_crate
    try:
        path, took = write_crate(rt.run_dir, out.format(run_id=rt.run_id) or None,
                                 force=not out)
    except Exception as exc:  # noqa: BLE001 - say why, whatever it was
        click.echo(f"taskflow: could not write the run's crate: {exc} (`taskflow crate "
                   f"{rt.run_id}` tries again)", err=True)
        return
    click.echo(f"taskflow: crate: {path} ({took:.1f} s)", err=True)


def _resume_report(rt: Runtime, explain: bool) -> None:
    """What a resumed run reused, and per task name why the rest ran again (always: a
    line per name); ``--explain``: each call that ran again too (taskflow explain)."""
    recovery = rt.recovery
    r = recovery.resumer
    assert r is not None
    adoption = recovery.adoption
    adopted = adoption.summary() if adoption is not None else ""
    again = sum(sum(v.values()) for v in r.reruns.values())
    click.echo(f"taskflow: resumed run {os.path.basename(r.store.run_dir)}: "
               f"{adopted + '; ' if adopted else ''}{r.restored} task(s) restored, {again} ran "
               f"again", err=True)
    for line in r.lines():
        click.echo(f"  {line}", err=True)
    if explain and again and rt.journal is not None:
        from ..journal.reader import Journal
        from .resuming import print_reasons
        try:
            with Journal(rt.run_dir) as j:
                print_reasons(j, err=True, calls_only=True)
        except Exception as exc:  # noqa: BLE001 - the run's end must not fail on it
            click.echo(f"taskflow: --explain: {exc}", err=True)
