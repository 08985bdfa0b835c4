"""``taskflow run script.py [args]``: run a script with the runtime started.

The script runs as ``__main__`` with a runtime started, a progress line on a
terminal and a summary at the end; the exit status is non-zero when the
script raised or a task failed.
"""
from __future__ import annotations

import os
import runpy
import sys
import time
import traceback

import click

from .. import diagnostics
from ..errors import UsageError
from ..observe.cliopts import OptionalValueCommand


@click.command(cls=OptionalValueCommand,
              context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--workers", "-w", type=click.IntRange(min=1), default=None,
              help="Executor slots on this machine (default: number of cores).")
@click.option("--nodes", type=click.IntRange(min=1), default=1, show_default=True,
              help="Split the local slots over this many node agents.")
@click.option("--retries", type=int, default=1, show_default=True,
              help="Times a failed task with on_failure=RETRY is run again.")
@click.option("--placement", type=click.Choice(["locality", "least-loaded", "fifo"]),
              default="locality", show_default=True, help="How a node is chosen for a task.")
@click.option("--run-dir", type=click.Path(file_okay=False), default=None,
              help="Where runs are kept (default .taskflow/runs).")
@click.option("--memory-budget", default=None, metavar="AMOUNT",
              help="Per node: above it, values held there spill to its disk. GB, an amount "
                   "(4GiB, 512MB) or a share of the node's memory (default 60%).")
@click.option("--memory-pause", default=None, metavar="AMOUNT",
              help="Per node: above it, the node takes no new task that only makes values "
                   "(default 4/3 of the budget).")
@click.option("--memory-limit", is_flag=True, default=False,
              help="Every task's memory_size is also a limit: a task that grows past it is "
                   "stopped (TaskMemoryExceeded).")
@click.option("--log-level", type=click.Choice(["debug", "info", "warning", "error"],
                                               case_sensitive=False), default="warning",
              show_default=True)
@click.option("--progress/--no-progress", default=None,
              help="Progress line (default: on when stderr is a terminal).")
@click.option("--graph", "-g", "graph_", is_flag=True,
              help="Write the task graph (graph.dot, graph.svg) into the run's directory.")
@click.option("--trace", "-t", "trace_", is_flag=True,
              help="Write a Chrome/Perfetto trace and a Gantt chart into the run's directory.")
@click.option("--monitor", type=int, default=None, metavar="[PORT]",
              help="Serve the live web monitor on 127.0.0.1 (any free port if none given).")
@click.option("--cluster", type=click.Path(exists=True, dir_okay=False), default=None,
              expose_value=False, callback=lambda ctx, _p, v: ctx.meta.update(tf_cluster=v),
              help="Cluster file (YAML) listing SSH and local nodes; see README.")
@click.option("--slurm", type=click.Choice(["batch", "pilot", "allocation"]), default=None,
              expose_value=False,
              callback=lambda ctx, _p, v: ctx.meta.update(tf_slurm=v),
              help="Workers from Slurm: one batch allocation, pilot jobs, or the allocation "
                   "this runs in (taskflow submit); agents dial back.")
@click.option("--slurm-nodes", type=int, default=1, show_default=True, expose_value=False,
              callback=lambda ctx, _p, v: ctx.meta.update(tf_slurm_nodes=v),
              help="Nodes of the batch allocation, or target number of pilots.")
@click.option("--slurm-opt", "slurm_opts", multiple=True, expose_value=False,
              metavar="KEY=VALUE", callback=lambda ctx, _p, v: ctx.meta.update(tf_slurm_opts=v),
              help="A Slurm setting, as in the cluster file's slurm section (repeatable): "
                   "cpus=4, partition=debug, time=30, account=..., qos=..., memory=8G, "
                   "max_queued=2, idle_timeout=120, drain_margin=60, host=10.0.0.5, "
                   "sbatch=--exclusive, worker_init='module load python'.")
@click.argument("script", type=click.Path(exists=True, dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
def run(workers: int | None, nodes: int, retries: int, placement: str, run_dir: str | None,
        memory_budget: str | None, memory_pause: str | None, memory_limit: bool,
        log_level: str, progress: bool | None, graph_: bool, trace_: bool, monitor: int | None,
        script: str, script_args: tuple[str, ...]) -> None:
    """Run SCRIPT with the taskflow runtime started."""
    diagnostics.setup(log_level)
    from ..runtime.console import Progress, summary
    from ..runtime.runtime import Runtime
    from ..providers.cluster import cli_runtime_options
    meta = click.get_current_context().meta
    rt_opts = cli_runtime_options(meta.get("tf_cluster"), placement)
    if meta.get("tf_slurm"):
        from ..providers.cluster import slurm_cli_provider
        rt_opts["providers"] = [slurm_cli_provider(meta["tf_slurm"], meta["tf_slurm_nodes"],
                                                   meta.get("tf_slurm_opts") or ())]
    for key, amount in (("memory_budget", memory_budget), ("memory_pause", memory_pause)):
        if amount is not None:      # the command line wins over the cluster file
            rt_opts[key] = _amount(amount)
    if memory_limit:
        rt_opts["memory_limit"] = True
    try:
        rt = Runtime(workers=workers, nodes=nodes, retries=retries, run_dir=run_dir, **rt_opts)
    except UsageError as exc:
        raise click.UsageError(str(exc)) from None
    t0 = time.time()
    try:
        rt.start()
    except Exception as exc:
        click.echo(f"taskflow: could not start the runtime: {exc}", err=True)
        sys.exit(2)
    from .observe import run_finished, run_started
    mon = run_started(rt, monitor)
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
    run_finished(rt, graph_, trace_, mon)
    sys.exit(1 if (script_failed or rt.failed) else 0)


def _amount(text: str) -> float | str:
    """A memory amount as given: a plain number is GB (wire.budget)."""
    try:
        return float(text)
    except ValueError:
        return text
