"""The ``taskflow`` command line (click): one module per command group.

``run`` (:mod:`.run`), ``map`` (:mod:`.map_command`), the commands that read a run's journal (:mod:`.observe`:
status, logs, graph, trace, report, monitor), the runs kept (:mod:`.runs`: runs,
clean), ``explain`` (:mod:`.resuming`), ``crate`` (:mod:`.crate`), ``submit`` (:mod:`.slurm`) and ``serve``
(:mod:`.serve`) are registered on :data:`main` here, explicitly. Short options
mean one thing in every command (:mod:`.options`).
"""
from __future__ import annotations

import click

from .._version import __version__
from ..errors import RecordDamaged
from .options import examples
from . import crate, map_command, observe, resuming, run, runs, serve, slurm


class _Main(click.Group):
    """A journal or resume log that cannot be read is one line, from every command."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except RecordDamaged as exc:
            raise click.ClickException(str(exc)) from None


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=examples("taskflow run wf.py in.txt     # run a workflow script",
                             "taskflow runs                 # the runs kept here",
                             "taskflow status               # the latest run",
                             "taskflow COMMAND --help       # a command's options"))
@click.version_option(__version__, prog_name="taskflow")
def main() -> None:
    """taskflow: task-based workflows for clusters and HPC machines."""


main.add_command(run.run)
main.add_command(map_command.map_command)
for _cmd in [*observe.COMMANDS, *runs.COMMANDS]:
    main.add_command(_cmd)
main.add_command(resuming.explain)
main.add_command(crate.crate)
main.add_command(slurm.submit)
main.add_command(serve.serve)
