"""``taskflow crate RUN``: a run as a Workflow Run Crate (RO-Crate), for WorkflowHub,
Zenodo and whoever reads a run outside taskflow (docs/guide/record-outside.md).

``taskflow run --crate`` (and ``--provenance`` under ``--compat pycompss``)
write one at the end of a run with :func:`write_crate`.
"""
from __future__ import annotations

import os
import time

import click

from .._version import install_hint
from ..errors import UsageError
from ..journal.reader import RunNotFound, resolve_run
from .observe import run_dir_option
from .options import examples


def _max_size(text: str) -> int:
    from ..wire.budget import to_bytes
    if text.isdigit():
        return int(text)
    try:
        return to_bytes(text, 0.0, "--max-size")
    except ValueError as exc:
        raise click.BadParameter(str(exc).replace("a number of GB, ", "bytes, ")) from None


def write_crate(run_dir: str, out: str | None = None, include_data: bool = False,
                max_size: int | None = None, force: bool = False,
                license: str | None = None, max_tasks: int | None = None) -> tuple[str, float]:
    """Build and write the crate of the run in ``run_dir``; (where it is, seconds taken)."""
    try:
        from ..crate import build, output
    except ImportError as exc:
        raise click.ClickException(f"a crate needs the rocrate package: "
                                   f"{install_hint('crate')} ({exc})") from None
    out = out or output.default_path(run_dir)
    t0 = time.perf_counter()
    output.refuse_existing(os.path.abspath(out), force)     # (before the journal is read)
    crate = build.build(run_dir, include_data, build.MAX_SIZE if max_size is None else max_size,
                        license, build.MAX_TASKS if max_tasks is None else max_tasks)
    return output.write(crate, out, force), time.perf_counter() - t0


@click.command(epilog=examples(
    "taskflow crate                          # the latest run, into <run dir>/crate",
    "taskflow crate RUN -o run.zip           # one zip file",
    "taskflow crate RUN --include-data -o d  # with the files it read and wrote (<= 10 MiB each)"))
@click.argument("run", required=False)
@run_dir_option
@click.option("--out", "-o", "out", default=None, metavar="DIR|FILE.zip",
              help="Where the crate goes: a directory, or a .zip file (default: the run's "
                   "directory, crate/).")
@click.option("--include-data", is_flag=True,
              help="Copy the files the run read and wrote into the crate (else they are "
                   "referenced by path, with size and sha256).")
@click.option("--max-size", default="10MiB", show_default=True, metavar="AMOUNT",
              help="With --include-data: files larger than this are referenced, not copied "
                   "(bytes, or 512MB, 1GiB).")
@click.option("--license", "license_", default=None, metavar="SPDX|URL",
              help="The licence the crate's record is under (an SPDX id such as CC-BY-4.0, or "
                   "a URL); without it the crate says none was given.")
@click.option("--max-tasks", type=click.IntRange(min=1), default=None, metavar="N",
              help="Tasks listed one by one (default 50,000; the crate is built in memory, "
                   "about 10 KB a task); the run's description says how many were left out.")
@click.option("--force", is_flag=True, help="Replace an existing crate at the output path.")
def crate(run: str | None, run_dir: str | None, out: str | None, include_data: bool,
          max_size: str, license_: str | None, max_tasks: int | None, force: bool) -> None:
    """Write RUN as a Workflow Run Crate (RO-Crate; Provenance Run Crate profile).

    The script is the workflow, each task name a step, each task an action with its
    parameters, the files it read and wrote (size, sha256), its node, attempts and the
    resources it used; the run with its command line, times and status; taskflow, Python
    and the programs of @binary/@mpi tasks with their versions; the nodes.
    """
    try:
        where = resolve_run(run, run_dir)
    except RunNotFound as exc:
        raise click.ClickException(str(exc)) from None
    try:
        path, took = write_crate(where, out, include_data, _max_size(max_size), force,
                                 license_, max_tasks)
    except UsageError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"could not write the crate: {exc}") from None
    click.echo(f"taskflow: crate of run {os.path.basename(where)}: {path} ({took:.1f} s)",
               err=True)
