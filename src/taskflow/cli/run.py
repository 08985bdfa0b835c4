"""``taskflow run script.py [args]``: run a script with the runtime started.

The script runs as ``__main__`` with a runtime started, progress bars on a
terminal and a summary at the end; the exit status is non-zero when the
script raised or a task failed (the script's ``taskflow.stop(code=N)``: N).
This module reads the options into a :class:`.driver.RunPlan`; the run
itself is :func:`.driver.drive`'s, with taskflow's own launcher or, under
``--compat pycompss``, runcompss's (:mod:`.runcompss`).
"""
from __future__ import annotations

from typing import Any

import click

from .. import diagnostics
from .options import OptionalValueCommand
from .driver import Launcher, RunPlan, drive
from .nodes import cluster_options, slurm_cli_provider
from .observe import run_dir_option
from .options import examples, renamed, retired
from .resuming import run_to_resume
from ..runtime.recovery.log import RESUMABLE
from ..wire.adoption import ADOPT_GRACE



class RunCommand(OptionalValueCommand):
    """``run``'s parser: under ``--compat pycompss`` runcompss's options are taken off first."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        from .runcompss import translate, wants_compat
        takes_value = {o for p in self.params if isinstance(p, click.Option)
                       and not p.is_flag and not p.count for o in p.opts}
        if wants_compat(args, takes_value):
            args, ctx.meta["tf_runcompss"] = translate(args, takes_value)
        return super().parse_args(ctx, args)


@click.command(cls=RunCommand,
              context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
              epilog=examples(
                  "taskflow run wf.py in.txt                # 'python wf.py in.txt' on every core",
                  "taskflow run -w 8 --trace -g wf.py       # 8 slots; trace and graph at the end",
                  "taskflow run --cluster nodes.yaml wf.py  # SSH nodes from a cluster file",
                  "taskflow run --resume wf.py in.txt       # continue the latest run of wf.py",
                  "taskflow run --inline wf.py in.txt       # every task here: breakpoint() works",
                  "taskflow run --plan wf.py in.txt         # what would run; nothing runs"))
@click.option("--workers", "-w", type=click.IntRange(min=1), default=None,
              help="Executor slots on this machine (default: number of cores).")
@click.option("--local-nodes", type=click.IntRange(min=1), default=None, metavar="K",
              help="Split the local slots over K node agents on this machine (default 1; "
                   "Slurm nodes: --slurm-nodes).")
@renamed("--nodes", "--local-nodes", "node agents on this machine; Slurm nodes are "
         "--slurm-nodes", type=click.IntRange(min=1))
@click.option("--retries", type=click.IntRange(min=0), default=None,
              help="Times a failed task with on_failure=RETRY is run again (default: 0; "
                   "under --compat pycompss, PyCOMPSs's 2).")
@click.option("--crash-limit", type=click.IntRange(min=0), default=3, show_default=True,
              help="Workers (executors, nodes) that may die running one task before it "
                   "fails; not counted against --retries.")
@click.option("--grace", type=click.FloatRange(min=0), default=10.0, show_default=True,
              help="Seconds running tasks get to stop when the run is interrupted (Ctrl-C, "
                   "SIGTERM) before they are killed.")
@click.option("--resumable/--no-resumable", " /--not-resumable", default=RESUMABLE,
              show_default=True,
              help="Log every finished task (values, file versions) so that a later "
                   "`--resume` restores it instead of running it again (the cost: "
                   "docs/guide/resume.md).")
@click.option("--resume", "resume", default=None, metavar="[RUN_ID]",
              help="Continue an earlier run (default: the latest of this script here): calls "
                   "it finished are restored, the rest runs.")
@click.option("--resume-check", type=click.Choice(["content", "mtime"]), default="content",
              show_default=True, help="How input files not written by a task are compared "
                                      "with the earlier run's: content digest, or path, size "
                                      "and modification time.")
@click.option("--checkpoint", default=None, metavar="POLICY",
              help="Resumable runs: write finished tasks' records every N tasks and/or T "
                   "seconds (tasks=N,seconds=T) instead of before each result is used; "
                   "fewer writes, and a killed master may redo up to that many tasks.")
@click.option("--adopt-grace", type=click.FloatRange(min=0), default=ADOPT_GRACE,
              show_default=True, metavar="SECONDS",
              help="Resumable runs: when the master dies, its node agents keep their running "
                   "tasks this long for `--resume` to adopt (0: they stop with it).")
@click.option("--explain", is_flag=True,
              help="With --resume: besides the line per task name, each call that ran again and why "
                   "(taskflow explain RUN says it later too).")
@click.option("--placement", type=click.Choice(["locality", "least-loaded", "fifo"]),
              default="locality", show_default=True, help="How a node is chosen for a task.")
@run_dir_option
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
              help="Progress on stderr (default: on): bars on a terminal; elsewhere (a log, "
                   "CI) a line every few seconds and at each change of the run's state.")
@click.option("--graph", "-g", "graph_", is_flag=True,
              help="Write the task graph (graph.dot, graph.svg) into the run's directory.")
@click.option("--trace", "trace_", is_flag=True,
              help="Write a Chrome/Perfetto trace and a Gantt chart into the run's directory.")
@retired("-t", "--trace", "-t is --time in taskflow submit, as in sbatch")
@click.option("--trace-file", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Write a row per task attempt to FILE as each one ends (Nextflow's trace "
                   "fields and taskflow's own; TSV, or CSV / JSON lines for a .csv / .json "
                   "name): `taskflow trace RUN --format tsv` writes the same afterwards.")
@click.option("--monitor", type=int, default=None, metavar="[PORT]",
              help="Serve the live web monitor on 127.0.0.1 (any free port if none given).")
@click.option("--crate", "crate_", is_flag=True,
              help="Write the run as a Workflow Run Crate (RO-Crate) into the run's directory "
                   "at its end (`taskflow crate RUN` makes one later).")
@click.option("--metrics-port", type=click.IntRange(min=0), default=None, metavar="PORT",
              help="Serve /metrics for Prometheus on 127.0.0.1:PORT (0: any free port) without "
                   "the web monitor; the URL with its token is printed (docs/guide/record-outside.md).")
@click.option("--cluster", type=click.Path(exists=True, dir_okay=False), default=None,
              expose_value=False, callback=lambda ctx, _p, v: ctx.meta.update(tf_cluster=v),
              help="Cluster file (YAML) listing SSH and local nodes; see docs/reference/cluster-file.md.")
@click.option("--slurm", type=click.Choice(["batch", "pilot", "auto", "allocation"]),
              default=None, expose_value=False,
              callback=lambda ctx, _p, v: ctx.meta.update(tf_slurm=v),
              help="Workers from Slurm: one batch allocation, pilot jobs, auto (the one the "
                   "queue and the run's work predict to finish first), or the allocation "
                   "this runs in (taskflow submit); agents dial back.")
@click.option("--slurm-nodes", type=int, default=1, show_default=True, expose_value=False,
              callback=lambda ctx, _p, v: ctx.meta.update(tf_slurm_nodes=v),
              help="Nodes of the batch allocation, or target number of pilots.")
@click.option("--slurm-opt", "slurm_opts", multiple=True, expose_value=False,
              metavar="KEY=VALUE", callback=lambda ctx, _p, v: ctx.meta.update(tf_slurm_opts=v),
              help="A Slurm setting, as in the cluster file's slurm section (repeatable): "
                   "cpus=4, partition=debug, time=30, account=..., qos=..., memory=8G, "
                   "max_queued=2, idle_timeout=120, drain_margin=60, host=10.0.0.5, "
                   "sbatch=--exclusive, worker_init='module load python', work=3600 "
                   "(--slurm auto: the run's slot-seconds of work).")
@click.option("--inline", is_flag=True,
              help="Run every task in this process, in call order, so that breakpoint() and "
                   "a debugger stop inside tasks (docs/guide/debugging.md); also "
                   "TASKFLOW_INLINE=1.")
@click.option("--plan", "plan_only", is_flag=True,
              help="Print what the script would run (per task name: calls, command lines, "
                   "files; with --resume, what would be reused) without starting a program "
                   "or writing outside the plan's own run directory.")
@click.option("--compat", type=click.Choice(["pycompss"]), default=None,
              help="Run an application written for another system unchanged: pycompss makes "
                   "pycompss.* resolve to taskflow and behaves as runcompss (its options, "
                   "e.g. --project/--resources XML, --summary, go before the script).")
@click.option("--compat-force", is_flag=True,
              help="With --compat pycompss: shadow a real PyCOMPSs installed here.")
@click.argument("script", type=click.Path(exists=True, dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
def run(workers: int | None, local_nodes: int | None, retries: int | None, crash_limit: int, grace: float,
        resumable: bool, resume: str | None, resume_check: str, checkpoint: str | None,
        adopt_grace: float, explain: bool, placement: str,
        run_dir: str | None, memory_budget: str | None, memory_pause: str | None,
        memory_limit: bool, log_level: str, progress: bool | None, graph_: bool,
        trace_: bool, trace_file: str | None, monitor: int | None, crate_: bool,
        metrics_port: int | None, inline: bool, plan_only: bool, compat: str | None,
        compat_force: bool, script: str, script_args: tuple[str, ...]) -> None:
    """Run SCRIPT with the taskflow runtime started."""
    ctx = click.get_current_context()
    meta = ctx.meta
    if meta.get("renamed--nodes") is not None:
        if local_nodes is not None:
            raise click.UsageError("--nodes and --local-nodes say the same: give --local-nodes")
        local_nodes = meta["renamed--nodes"]
    if inline or plan_only:
        _here_only("--plan" if plan_only else "--inline", compat, meta)
    if plan_only:
        from ..debugging.planning import plan_cli
        plan_cli(script, script_args, dict(
            workers=workers, retries=retries, resume_check=resume_check,
            resume=run_to_resume(resume, script, run_dir) if resume is not None else None))
    launcher = Launcher()
    if compat == "pycompss":
        from .runcompss import Runcompss
        launcher = Runcompss(meta.get("tf_runcompss"), script, compat_force)
    diagnostics.setup(launcher.log_level(log_level))
    launcher.prepare()
    rt_opts = cluster_options(meta.get("tf_cluster"), placement)
    launcher.nodes(rt_opts, bool(meta.get("tf_cluster") or meta.get("tf_slurm")))
    if meta.get("tf_slurm"):
        opts = tuple(meta.get("tf_slurm_opts") or ())
        if meta["tf_slurm"] == "auto" and run_dir:    # where its earlier runs' work is
            opts += (f"history={run_dir}",)
        rt_opts["providers"] = [slurm_cli_provider(meta["tf_slurm"], meta["tf_slurm_nodes"],
                                                   opts)]
    resume_dir = run_to_resume(resume, script, run_dir) if resume is not None else None
    for key, amount in (("memory_budget", memory_budget), ("memory_pause", memory_pause)):
        if amount is not None:      # the command line wins over the cluster file
            rt_opts[key] = _amount(amount)
    if memory_limit:
        rt_opts["memory_limit"] = True
    if retries is not None:         # else the launcher's default (Runtime's, or PyCOMPSs's)
        rt_opts["retries"] = retries
    runtime: dict[str, Any] = dict(
        workers=workers, nodes=local_nodes or 1, run_dir=run_dir, crash_limit=crash_limit,
        resumable=resumable, resume=resume_dir, resume_check=resume_check,
        checkpoint=checkpoint, adopt_grace=adopt_grace, **rt_opts)
    if inline and progress is None:     # (bars would write over a debugger's prompt)
        progress = False
    plan = RunPlan(script, script_args, runtime, grace=grace, explain=explain,
                   progress=progress, graph=graph_, trace=trace_, monitor=monitor,
                   inline=inline, trace_file=trace_file, crate="" if crate_ else None,
                   metrics=metrics_port)
    launcher.adjust(plan)
    drive(plan, launcher)


def _here_only(flag: str, compat: str | None, meta: dict[str, Any]) -> None:
    """``--inline`` and ``--plan`` run every task in this process: no nodes to ask for."""
    given = [o for o, key in (("--cluster", "tf_cluster"), ("--slurm", "tf_slurm"))
             if meta.get(key)]
    if compat is not None and flag == "--plan":
        given.append("--compat")
    if given:
        raise click.UsageError(f"{flag} runs every task in this process: leave out "
                               f"{' and '.join(given)}")


def _amount(text: str) -> float | str:
    """A memory amount as given: a plain number is GB (wire.budget)."""
    try:
        return float(text)
    except ValueError:
        return text
