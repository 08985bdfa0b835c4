"""A command line read as ``bash -c`` would read it, without running a shell (node side).

PyCOMPSs runs a ``@binary`` through ``bash -c "<binary> <args>"``, so its
users rely on word splitting (a value ``"-n 4"`` is two arguments), quotes,
``$VAR`` and ``~`` expansion and globs (``*.txt`` becomes the matching
files, sorted; a pattern matching nothing stays as written). :func:`split`
does exactly that part of bash in Python and gives an argv list; shell
operators (``;``, ``|``, ``&``, ``<``, ``>``, backquotes, ``$(``) that only
a real shell could honour are refused with :class:`ShellSyntax` instead of
being passed on as literal arguments. No shell string is ever built.
"""
from __future__ import annotations

import glob
import os
import re
from typing import Mapping

_VAR = re.compile(r"\$(?:\{(\w+)\}|(\w+))")
_GLOB = frozenset("*?[")
OPERATORS = frozenset(";|&<>`")


class ShellSyntax(ValueError):
    """The text needs a real shell (redirection, pipes, command substitution...)."""


def split(text: str, env: Mapping[str, str], cwd: str) -> list[str]:
    """``text`` -> argv as bash would split and expand it (see the module docstring)."""
    words: list[list[tuple[str, bool]]] = []      # per word: (piece, quoted?)
    cur: list[tuple[str, bool]] | None = None
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\n":
            if cur is not None:
                words.append(cur)
                cur = None
            i += 1
            continue
        if cur is None:
            cur = []
        if c == "'":
            j = text.find("'", i + 1)
            if j < 0:
                raise ShellSyntax(f"unterminated single quote in {text!r}")
            cur.append((text[i + 1:j], True))
            i = j + 1
        elif c == '"':
            j = i + 1
            buf = []
            while j < n and text[j] != '"':
                if text[j] == "\\" and j + 1 < n and text[j + 1] in '"\\$`':
                    buf.append(text[j + 1])
                    j += 2
                    continue
                if text[j] == "`" or text.startswith("$(", j):
                    raise ShellSyntax(f"command substitution in {text!r} needs a shell")
                buf.append(text[j])
                j += 1
            if j >= n:
                raise ShellSyntax(f"unterminated double quote in {text!r}")
            cur.append((_expand_vars("".join(buf), env), True))
            i = j + 1
        elif c == "\\":
            if i + 1 < n:
                cur.append((text[i + 1], True))
            i += 2
        elif c in OPERATORS or text.startswith("$(", i):
            raise ShellSyntax(f"{c if c in OPERATORS else '$('} in {text!r} is shell syntax "
                              f"(a redirection, a pipe, a list or a substitution) that taskflow "
                              f"does not run a shell for; use a stream parameter "
                              f"(FILE_OUT_STDOUT, FILE_IN_STDIN, ...) or a wrapper script")
        else:
            j = i
            while j < n and text[j] not in " \t\n'\"\\" and text[j] not in OPERATORS \
                    and not text.startswith("$(", j):
                j += 1
            piece = text[i:j]
            if not cur and piece.startswith("~"):
                head, sep, rest = piece.partition("/")
                home = os.path.expanduser(head)
                piece = home + sep + rest if home != head else piece
            cur.append((_expand_vars(piece, env), False))
            i = j
    if cur is not None:
        words.append(cur)
    out: list[str] = []
    for w in words:
        text_w = "".join(p for p, _ in w)
        if any(not q and any(ch in _GLOB for ch in p) for p, q in w):
            pattern = "".join(p if not q else glob.escape(p) for p, q in w)
            found = sorted(glob.glob(pattern, root_dir=cwd))
            if found:
                out.extend(found)
                continue
        out.append(text_w)
    return out


def _expand_vars(s: str, env: Mapping[str, str]) -> str:
    if "$" not in s:
        return s
    return _VAR.sub(lambda m: env.get(m.group(1) or m.group(2), ""), s)


def needs_shell(text: str) -> str | None:
    """The shell operator ``text`` uses outside quotes, if any (checked on the master)."""
    try:
        split(text, {}, ".")
    except ShellSyntax as exc:
        return str(exc)
    return None
