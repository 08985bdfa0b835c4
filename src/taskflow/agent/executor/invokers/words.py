"""PyCOMPSs's command lines without a shell: each parameter value is one argument.

COMPSs runs a ``@binary`` (and the programs of ``@mpi``, ``@mpmd_mpi``,
``@ompss``, ``@compss``, prologs and epilogs) through ``bash -c`` after
escaping the spaces of every value it puts into the line, so only the
``args`` template separates arguments: ``myDate("-d", "next wednesday")``
with ``args="{{flag}} {{when}}"`` runs ``date -d 'next wednesday'``. This
module gives the same argv without running bash, in two steps:

- :func:`taskflow.wire.template.template_words` (master, when the task is
  called): the template read as bash reads a command line, ``$VAR``
  expanded, ``{{name}}`` placeholders kept for the values; shell operators
  that only a real shell could honour are refused (``ShellSyntax``).
- :func:`fill` (node): the call's values put in. A value is exactly one
  argument wherever its placeholder stands (a list or tuple: one argument
  per element, as COMPSs serialises a collection); values are never split,
  globbed or expanded. A glob written unquoted in the template itself
  (``*.dat``) is expanded in the program's working directory (sorted; kept
  as written when nothing matches), as bash would.

(The words' marks for glob patterns and redirections: :mod:`taskflow.wire.template`.)
"""
from __future__ import annotations

import glob
import os
import re
from typing import Any, Callable, Mapping

from ....wire.template import PATTERN, PLACEHOLDER, REDIRECT, ShellSyntax

_ESCAPED = re.compile(r"\[([*?\[])\]")


def fill(words: tuple[str, ...], values: Mapping[str, Any],
         entries: Callable[[str], list[str]], cwd: str) -> list[str]:
    """The argv the words give with the call's values (``entries(name)``: a parameter's
    value as arguments, prefix included; see the module docstring)."""
    out: list[str] = []
    for w in words:
        if w.startswith(REDIRECT):
            continue
        if w.startswith(PATTERN):
            for pat in _put(w[1:], entries, glob.escape):
                found = sorted(glob.glob(pat, root_dir=cwd))
                out.extend(found or [_ESCAPED.sub(r"\1", pat)])
        elif "{{" in w:
            out.extend(_put(w, entries, None))
        else:
            out.append(w)
    return out


def redirects(words: tuple[str, ...], entries: Callable[[str], list[str]], cwd: str
              ) -> dict[str, tuple[str, str]]:
    """The template's redirections as the program's streams: {"stdin" | "stdout" |
    "stderr": (absolute path, "IN" | "OUT" | "INOUT" (append))}."""
    out: dict[str, tuple[str, str]] = {}
    names = {"0": "stdin", "1": "stdout", "2": "stderr"}
    for w in words:
        if not w.startswith(REDIRECT):
            continue
        how, target = w[1:].split(REDIRECT, 1)
        fd, op = how[:1], how[1:]
        if op == ">&":                  # 2>&1 / 1>&2: the same file as the other stream
            other = out.get(names[target])
            if other is not None:
                other_path, _ = other
                out[names[fd]] = (other_path, "INOUT")
            continue
        paths = fill((target,), {}, entries, cwd)
        if len(paths) != 1:
            raise ShellSyntax(f"the redirection {op} {target!r} names {len(paths)} files")
        (one,) = paths
        path = os.path.join(cwd, one)
        mode = "IN" if op == "<" else "INOUT" if op == ">>" else "OUT"
        for stream in (("stdout", "stderr") if fd == "&" else (names[fd],)):
            out[stream] = (path, mode)
    return out


def _put(word: str, entries: Callable[[str], list[str]],
         escape: Callable[[str], str] | None) -> list[str]:
    """``word`` with its placeholders replaced; a value of several entries starts a new
    argument at each (COMPSs: the text before sticks to the first, after to the last)."""
    m = PLACEHOLDER.fullmatch(word)
    if m:
        vals = entries(m.group(1))
        return [escape(v) for v in vals] if escape else vals
    args = [""]
    pos = 0
    for m in PLACEHOLDER.finditer(word):
        args[-1] += word[pos:m.start()]
        vals = entries(m.group(1))
        if escape:
            vals = [escape(v) for v in vals]
        if vals:
            first, *more = vals
            args[-1] += first
            args.extend(more)
        pos = m.end()
    args[-1] += word[pos:]
    return args


