"""What every ``taskflow`` command shares in its options: examples, and retired spellings.

One meaning per short option across the subcommands: ``taskflow submit``
keeps sbatch's (``-N`` nodes, ``-t`` time, ``-p`` partition, ``-A``
account, ``-J`` job name), which Slurm users type without thinking; ``-t``
is no longer ``run --trace`` and ``-p`` no longer ``monitor`` / ``serve
--port`` (the long forms stay). A retired short option is refused with the
long form to use (:func:`retired`); ``run --nodes`` (local node agents, not
Slurm nodes) still works, with a note, as ``--local-nodes``
(:func:`renamed`).
"""
from __future__ import annotations

from typing import Any, Callable

import click


def examples(*lines: str) -> str:
    """A command's epilog: its examples, one per line, kept as written by ``--help``."""
    return "\b\nExamples:\n" + "\n".join(f"  {ln}" for ln in lines)


def retired(short: str, now: str, why: str, takes_value: bool = False) -> Callable[[Any], Any]:
    """A hidden ``short`` option that stops with the long form to write instead."""
    def refuse(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value not in (None, False):
            raise click.UsageError(f"{short} is not {now} any more ({why}); write {now}", ctx)

    return click.option(short, "retired_" + short.strip("-"), hidden=True,
                        expose_value=False, is_flag=not takes_value,
                        default=None if takes_value else False, callback=refuse)


def renamed(old: str, new: str, meaning: str, **kwargs: Any) -> Callable[[Any], Any]:
    """A hidden ``old`` long option that still works as ``new`` (in ``ctx.meta``), with a
    note on stderr."""
    def note(ctx: click.Context, param: click.Parameter, value: Any) -> None:
        if value is not None:
            click.echo(f"taskflow: {old} is now {new} ({meaning}); {old} will go", err=True)
            ctx.meta[f"renamed{old}"] = value

    return click.option(old, "renamed_" + old.strip("-").replace("-", "_"), hidden=True,
                        expose_value=False, default=None, callback=note, **kwargs)
