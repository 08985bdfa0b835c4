"""The ``taskflow`` command line (click).

``taskflow run script.py [args]`` runs a script as ``__main__`` with a
runtime started, a progress line on a terminal and a summary at the end;
its exit status is non-zero when the script raised or a task failed.
Other issues add subcommands in their own modules and register them on
:data:`main`.
"""
from __future__ import annotations

import logging
import os
import runpy
import sys
import time
import traceback

import click

from . import __version__


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="taskflow")
def main() -> None:
    """taskflow: task-based workflows for clusters and HPC machines."""


@main.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--workers", "-w", type=int, default=None,
              help="Executor slots on this machine (default: number of cores).")
@click.option("--nodes", type=int, default=1, show_default=True,
              help="Split the local slots over this many node agents.")
@click.option("--retries", type=int, default=1, show_default=True,
              help="Times a failed task with on_failure=RETRY is run again.")
@click.option("--placement", type=click.Choice(["locality", "least-loaded", "fifo"]),
              default="locality", show_default=True, help="How a node is chosen for a task.")
@click.option("--run-dir", type=click.Path(file_okay=False), default=None,
              help="Where runs are kept (default .taskflow/runs).")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"],
                                               case_sensitive=False), default="warning",
              show_default=True)
@click.option("--progress/--no-progress", default=None,
              help="Progress line (default: on when stderr is a terminal).")
@click.argument("script", type=click.Path(exists=True, dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
def run(workers, nodes, retries, placement, run_dir, log_level, progress, script,
        script_args) -> None:
    """Run SCRIPT with the taskflow runtime started."""
    logging.basicConfig(level=getattr(logging, log_level.upper()),
                        format="taskflow %(levelname)s %(name)s: %(message)s")
    from .runtime.console import Progress, summary
    from .runtime.runtime import Runtime
    rt = Runtime(workers=workers, nodes=nodes, retries=retries, placement=placement,
                 run_dir=run_dir)
    t0 = time.time()
    try:
        rt.start()
    except Exception as exc:
        click.echo(f"taskflow: could not start the runtime: {exc}", err=True)
        sys.exit(2)
    show = sys.stderr.isatty() if progress is None else progress
    prog = Progress(rt) if show else None
    script_failed = False
    interrupted = False
    sys.argv = [script, *script_args]
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        script_failed = exc.code not in (None, 0)
    except KeyboardInterrupt:
        interrupted = True
        script_failed = True
        click.echo("taskflow: interrupted; stopping without waiting for running tasks", err=True)
    except BaseException:  # noqa: BLE001 - report whatever the script raised
        script_failed = True
        click.echo(traceback.format_exc().rstrip(), err=True)
    try:
        rt.stop(wait=not interrupted)
    finally:
        if prog is not None:
            prog.close()
    for err in rt.unreported_failures()[:3]:
        click.echo(f"taskflow: {err}", err=True)
    click.echo(summary(rt, time.time() - t0), err=True)
    sys.exit(1 if (script_failed or rt.failed) else 0)


if __name__ == "__main__":  # pragma: no cover
    main()
