"""What every ``taskflow`` command shares in its options: examples, and retired spellings.

One meaning per short option across the subcommands: ``taskflow submit``
keeps sbatch's (``-N`` nodes, ``-t`` time, ``-p`` partition, ``-A``
account, ``-J`` job name), which Slurm users type without thinking; ``-t``
is no longer ``run --trace`` and ``-p`` no longer ``monitor`` / ``serve
--port`` (the long forms stay). A retired short option is refused with the
long form to use (:func:`retired`); ``run --nodes`` (local node agents, not
Slurm nodes) still works, with a note, as ``--local-nodes``
(:func:`renamed`). :class:`OptionalValueCommand` lets an option stand alone or take a
value (``--monitor`` or ``--monitor 8080``).
"""
from __future__ import annotations

import os
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


def _not_a_file(a: str) -> bool:
    return not os.path.isfile(a)


class OptionalValueCommand(click.Command):
    """Lets ``--monitor`` stand alone before the script: ``--monitor script.py`` means port 0.

    Click would otherwise take ``script.py`` as the option's value; a bare
    option followed by something that is not its value (not a number for
    ``--monitor``, an existing file for ``--resume``) gets its default value
    written in. Only the arguments before the script (the first positional)
    are looked at.
    """

    optional_value_options: dict[str, tuple[str, Callable[[str], bool]]] = {
        "--monitor": ("0", str.isdigit), "--resume": ("latest", _not_a_file)}

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        takes_value = set()
        for p in self.params:
            if isinstance(p, click.Option) and not p.is_flag and not p.count:
                takes_value.update(p.opts)
        out: list[str] = []
        i = 0
        while i < len(args):
            a = args[i]
            if a in self.optional_value_options:
                default, is_value = self.optional_value_options[a]
                nxt = args[i + 1] if i + 1 < len(args) else ""
                if nxt and not nxt.startswith("-") and is_value(nxt):
                    out += [a, nxt]
                    i += 2
                else:
                    out.append(f"{a}={default}")
                    i += 1
                continue
            if a in takes_value:
                out += args[i:i + 2]
                i += 2
                continue
            if a == "--" or not a.startswith("-"):
                out += args[i:]
                break
            out.append(a)
            i += 1
        return super().parse_args(ctx, out)
