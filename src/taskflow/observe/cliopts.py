"""Click helper: an option whose value is optional (``--monitor`` or ``--monitor 8080``)."""
from __future__ import annotations

import os
from typing import Callable

import click


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
