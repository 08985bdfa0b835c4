"""``taskflow submit``: run a workflow's master inside a Slurm allocation.

Like PyCOMPSs's ``enqueue_compss``: it writes a job script whose batch step
is ``taskflow run --slurm allocation script.py``, submits it with ``sbatch``
and prints the job id and where its output and its run directory go. Inside
the job the master starts one node agent per allocated node with ``srun``
(:mod:`taskflow.providers.slurm.alloc`).
"""
from __future__ import annotations

import os
import shlex
import sys
import time

import click

from ..context import PYTHON, private_dir
from ..journal.root import runs_root
from .options import OptionalValueCommand
from .observe import run_dir_option
from .options import examples



def job_script(script: str, args: tuple[str, ...], *, nodes: int, time_limit: str, job_name: str,
               out_dir: str, run_dir: str, partition: str | None = None,
               cpus: int | None = None, account: str | None = None, qos: str | None = None,
               memory: str | None = None, sbatch: tuple[str, ...] = (),
               worker_init: tuple[str, ...] = (), resumable: bool = True,
               resume: str | None = None, signal_before: int = 120,
               resubmit: list[str] | None = None, python: str = PYTHON) -> str:
    """The text of the job script (also what ``--dry-run`` prints)."""
    lines = ["#!/bin/bash", f"#SBATCH --job-name={job_name}", f"#SBATCH --nodes={nodes}",
             "#SBATCH --ntasks-per-node=1", f"#SBATCH --time={time_limit}",
             f"#SBATCH --output={out_dir}/%x-%j.out", f"#SBATCH --chdir={os.getcwd()}"]
    if cpus:
        lines.append(f"#SBATCH --cpus-per-task={cpus}")
    for opt, val in (("partition", partition), ("account", account), ("qos", qos),
                     ("mem", memory)):
        if val:
            lines.append(f"#SBATCH --{opt}={val}")
    if signal_before > 0:   # the walltime's warning goes to `taskflow run` (exec'd below)
        lines.append(f"#SBATCH --signal=B:TERM@{signal_before}")
    lines += [ln if ln.startswith("#SBATCH") else f"#SBATCH {ln}" for ln in sbatch]
    lines += list(worker_init)
    if resubmit is not None:      # what an interrupted run prints to continue (interrupts.py)
        lines.append(f"export TASKFLOW_RESUBMIT={shlex.quote(shlex.join(resubmit))}")
    pypath = os.pathsep.join(p for p in sys.path if p)
    lines.append(f"export PYTHONPATH={shlex.quote(pypath)}${{PYTHONPATH:+:$PYTHONPATH}}")
    # progress as plain lines in the job's output (off a terminal: console.lines)
    run = [python, "-m", "taskflow", "run", "--slurm", "allocation",
           "--slurm-nodes", str(nodes), "--run-dir", run_dir,
           "--resumable" if resumable else "--no-resumable"]
    if resume:
        run += ["--resume", resume]
    if cpus:
        run += ["--slurm-opt", f"cpus={cpus}"]
    for w in worker_init:
        run += ["--slurm-opt", f"worker_init={w}"]
    run += [os.path.abspath(script), *args]
    lines.append("exec " + shlex.join(run))
    return "\n".join(lines) + "\n"


@click.command(cls=OptionalValueCommand,
               context_settings={"ignore_unknown_options": True,
                                 "allow_interspersed_args": False},
               epilog=examples(
                   "taskflow submit -N 4 -t 30 -p main --cpus 48 wf.py in.txt",
                   "taskflow submit -N 2 -t 10 --dry-run wf.py     # print the job script",
                   "taskflow submit -N 4 -t 30 --resume wf.py      # continue the latest run"))
@click.option("--nodes", "-N", type=int, required=True,
              help="Slurm nodes of the allocation (sbatch -N).")
@click.option("--time", "-t", "time_limit", required=True,
              help="Walltime (sbatch --time: minutes, or [D-]HH:MM:SS).")
@click.option("--partition", "-p", default=None, help="Slurm partition (sbatch -p).")
@click.option("--cpus", type=int, default=None, help="CPUs (slots) per node.")
@click.option("--account", "-A", default=None)
@click.option("--qos", default=None)
@click.option("--memory", default=None, help="Memory per node (sbatch --mem), e.g. 8G.")
@click.option("--job-name", "-J", default=None, help="Default: taskflow-<script name>.")
@click.option("--sbatch", "sbatch_lines", multiple=True, metavar="LINE",
              help="An extra #SBATCH line (repeatable), e.g. --sbatch=--exclusive.")
@click.option("--worker-init", multiple=True, metavar="CMD",
              help="A shell line run before the master and each agent (repeatable), "
                   "e.g. 'module load python/3.11'.")
@run_dir_option
@click.option("--resumable/--no-resumable", " /--not-resumable", default=True, show_default=True,
              help="Keep what finishes so that a job that hits its walltime (or is "
                   "cancelled) can be submitted again with --resume.")
@click.option("--resume", "resume", default=None, metavar="[RUN_ID]",
              help="Continue an earlier run (default: the latest of this script here): what "
                   "it finished is restored, the rest runs.")
@click.option("--signal-before", type=click.IntRange(min=0), default=120, show_default=True,
              metavar="SECONDS",
              help="SIGTERM to the master this long before the walltime (sbatch "
                   "--signal=B:TERM@S; 0: none): the run stops cleanly and can be resumed.")
@click.option("--dry-run", is_flag=True, help="Print the job script; submit nothing.")
@click.argument("script", type=click.Path(exists=True, dir_okay=False))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED)
def submit(nodes: int, time_limit: str, partition: str | None, cpus: int | None,
           account: str | None, qos: str | None, memory: str | None, job_name: str | None,
           sbatch_lines: tuple[str, ...], worker_init: tuple[str, ...], run_dir: str | None,
           resumable: bool, resume: str | None, signal_before: int, dry_run: bool,
           script: str, script_args: tuple[str, ...]) -> None:
    """Submit SCRIPT to Slurm: its master and its workers run in one allocation."""
    if nodes < 1:
        raise click.BadParameter("must be >= 1", param_hint="--nodes")
    root = runs_root(run_dir)
    out_dir = os.path.join(os.path.dirname(root), "submit")
    name = job_name or "taskflow-" + os.path.splitext(os.path.basename(script))[0]
    text = job_script(script, script_args, nodes=nodes, time_limit=time_limit, job_name=name,
                      out_dir=out_dir, run_dir=root, partition=partition, cpus=cpus,
                      account=account, qos=qos, memory=memory, sbatch=sbatch_lines,
                      worker_init=worker_init, resumable=resumable, resume=resume,
                      signal_before=signal_before,
                      resubmit=_submit_options(sys.argv, len(script_args)))
    if dry_run:
        click.echo(text, nl=False)
        return
    private_dir(out_dir)
    path = os.path.join(out_dir, f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.sh")
    with open(path, "w") as f:
        f.write(text)
    from ..errors import SlurmError
    from ..providers.slurm.queue import slurm as _slurm
    try:
        jid = _slurm(["sbatch", "--parsable", path]).strip().split(";")[0]
    except SlurmError as exc:
        click.echo(f"taskflow submit: {exc}\n  job script: {path}", err=True)
        sys.exit(1)
    click.echo(f"submitted job {jid} ({nodes} node{'s' if nodes != 1 else ''}, {time_limit})")
    click.echo(f"  job script: {path}")
    click.echo(f"  output:     {out_dir}/{name}-{jid}.out")
    click.echo(f"  runs:       {root}  (taskflow status --run-dir {root})")


def _submit_options(argv: list[str], n_args: int) -> list[str] | None:
    """The options this ``taskflow submit`` was given, without --resume and --dry-run."""
    if "submit" not in argv:
        return None
    opts = argv[argv.index("submit") + 1:len(argv) - 1 - n_args]
    out: list[str] = []
    after_resume = False
    for o in opts:
        if after_resume and not o.startswith("-"):     # its value (optional: see the class)
            after_resume = False
            continue
        after_resume = o == "--resume"
        if not after_resume and not o.startswith("--resume=") and o != "--dry-run":
            out.append(o)
    return out
