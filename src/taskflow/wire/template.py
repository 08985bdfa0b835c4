"""A program's ``args`` template: its ``{{name}}`` placeholders and PyCOMPSs's words.

Both sides read the template: the master checks it when the task is declared
and, for PyCOMPSs's programs, reads it into words when the task is called;
the node puts the call's values in (``agent.executor.invokers.command``,
``agent.executor.invokers.words``). This module is what they share.

:data:`PLACEHOLDER` is ``{{name}}``: a parameter of the task, written in a
template (``args``, ``working_dir``, an HTTP resource).

COMPSs runs a ``@binary`` (and the programs of ``@mpi``, ``@mpmd_mpi``,
``@ompss``, ``@compss``, prologs and epilogs) through ``bash -c`` after
escaping the spaces of every value it puts into the line, so only the
``args`` template separates arguments. :func:`template_words` reads the
template as bash reads a command line. Blanks separate words, quotes and
backslashes group and escape, ``$VAR`` / ``${VAR}`` expand from the
master's environment outside single quotes (runcompss's bash: ``$PWD`` is
the launch directory; an unquoted one is split on blanks), ``~`` starting
a word is the home directory. ``{{name}}`` placeholders stay for the
values (the node fills them in: :func:`taskflow.agent.executor.invokers.words.fill`).
Shell operators (``;``, ``|``, ``&``, ``<``, ``>``, backquotes, ``$(``) that
only a real shell could honour are refused (:class:`ShellSyntax`) rather than
passed on as literal arguments; :func:`check` says so when the task is
declared.

A word holding an unquoted glob is kept as a glob pattern (its quoted parts
escaped) marked by a leading NUL (:data:`PATTERN`), which no argv entry can
contain; a redirection is kept as ``\x01<fd><op>\x01<target word>``
(:data:`REDIRECT`).
"""
from __future__ import annotations

import glob
import os
import re
from typing import Callable, Mapping

PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_NAME = re.compile(r"[A-Za-z_]\w*")
_GLOB = frozenset("*?[")
OPERATORS = frozenset(";|&<>`")
PATTERN = "\0"          # marks a word that is a glob pattern
REDIRECT = "\x01"       # marks a redirection: \x01<fd><op>\x01<target word>


class ShellSyntax(ValueError):
    """The text needs a real shell (redirection, pipes, command substitution...)."""


class UnsetVariable(ValueError):
    """A ``$VAR`` of the template is not set in the environment."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


def _refuse(what: str, text: str) -> ShellSyntax:
    return ShellSyntax(f"{what} in {text!r} is shell syntax (a redirection, a pipe, a list or "
                       f"a substitution) that taskflow does not run a shell for; use a stream "
                       f"parameter (FILE_OUT_STDOUT, FILE_IN_STDIN, ...) or a wrapper script")


def template_words(text: str, env: Mapping[str, str] | None) -> tuple[str, ...]:
    """``text`` -> its words (see the module docstring). ``env=None``: only check the
    syntax (every ``$VAR`` stands for a one-word value)."""
    words: list[str] = []
    cur: list[tuple[str, bool]] | None = None      # (piece, may glob?)
    redirect: str | None = None                     # the next word is this one's target

    def add(piece: str, globbing: bool = False) -> None:
        nonlocal cur
        if cur is None:
            cur = []
        cur.append((piece, globbing))

    def end() -> None:
        nonlocal cur, redirect
        if cur is not None:
            word = _word(cur)
            if redirect is not None:
                words.append(f"{REDIRECT}{redirect}{REDIRECT}{word}")
                redirect = None
            else:
                words.append(word)
            cur = None

    def var(name: str, quoted: bool) -> None:
        if env is None:
            add("x")
            return
        if name not in env:
            raise UnsetVariable(name)
        value = env[name]
        if quoted:
            add(value)
            return
        parts = value.split()
        if not parts:
            return
        if value[:1].isspace():
            end()
        for j, part in enumerate(parts):
            if j:
                end()
            add(part)
        if value[-1:].isspace():
            end()

    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\n":
            end()
            i += 1
        elif c == "'":
            j = text.find("'", i + 1)
            if j < 0:
                raise ShellSyntax(f"unterminated single quote in {text!r}")
            add(text[i + 1:j])
            i = j + 1
        elif c == '"':
            i = _double_quoted(text, i + 1, add, var)
        elif c == "\\":
            add(text[i + 1:i + 2])
            i += 2
        elif c in "<>" or text.startswith("&>", i):
            if redirect is not None:
                raise _refuse(c, text)          # two redirections in a row
            fd = "&" if c == "&" else ""
            if cur is not None and len(cur) == 1 and cur[-1] in (("1", True), ("2", True)):
                fd, cur = cur[-1][0], None      # 2> : the number is the descriptor's
            end()
            i += 2 if c == "&" else 1
            op = c if c != "&" else ">"
            if op == ">" and text.startswith(">", i):
                op, i = ">>", i + 1
            if op == ">" and text.startswith("&", i):   # 2>&1: stderr where stdout goes
                m = re.match(r"&([12])", text[i:])
                if not m:
                    raise _refuse(">&", text)
                words.append(f"{REDIRECT}{fd or '1'}>&{REDIRECT}{m.group(1)}")
                i += 2
                continue
            redirect = (fd or ("0" if op == "<" else "1")) + op
        elif c in OPERATORS or text.startswith("$(", i):
            raise _refuse(c if c in OPERATORS else "$(", text)
        elif c == "$":
            i = _dollar(text, i, lambda name: var(name, False), add)
        elif text.startswith("{{", i) and PLACEHOLDER.match(text, i):
            m = PLACEHOLDER.match(text, i)
            assert m is not None
            add("{{" + m.group(1) + "}}")
            i = m.end()
        else:
            j = i
            while j < n and text[j] not in " \t\n'\"\\$" and text[j] not in OPERATORS \
                    and not text.startswith("{{", j):
                j += 1
            piece = text[i:j] if j > i else c
            j = max(j, i + 1)
            if cur is None and piece.startswith("~"):
                head, sep, rest = piece.partition("/")
                home = os.path.expanduser(head)
                if home != head:
                    piece = home + sep + rest
                    add(piece)
                    i = j
                    continue
            add(piece, True)
            i = j
    end()
    if redirect is not None:
        raise ShellSyntax(f"a redirection without a file in {text!r}")
    return tuple(words)


def _double_quoted(text: str, i: int, add: Callable[..., None],
                   var: Callable[[str, bool], None]) -> int:
    """The text after an opening double quote at ``i``; returns where it ended."""
    buf: list[str] = []
    n = len(text)
    while i < n and text[i] != '"':
        c = text[i]
        if c == "\\" and i + 1 < n and text[i + 1] in '"\\$`':
            buf.append(text[i + 1])
            i += 2
        elif c == "`" or text.startswith("$(", i):
            raise _refuse("`" if c == "`" else "$(", text)
        elif c == "$":
            add("".join(buf))
            buf = []
            i = _dollar(text, i, lambda name: var(name, True), add)
        else:
            buf.append(c)
            i += 1
    if i >= n:
        raise ShellSyntax(f"unterminated double quote in {text!r}")
    add("".join(buf))
    return i + 1


def _dollar(text: str, i: int, expand: Callable[[str], None],
            add: Callable[..., None]) -> int:
    """``$NAME`` / ``${NAME}`` at ``i`` expanded; any other ``$`` is itself."""
    if text.startswith("${", i):
        j = text.find("}", i + 2)
        if j > 0 and _NAME.fullmatch(text[i + 2:j]):
            expand(text[i + 2:j])
            return j + 1
    m = _NAME.match(text, i + 1)
    if m:
        expand(m.group(0))
        return m.end()
    add("$")
    return i + 1


def _word(pieces: list[tuple[str, bool]]) -> str:
    if any(g and any(ch in _GLOB for ch in p) for p, g in pieces):
        return PATTERN + "".join(p if g or p.startswith("{{") else glob.escape(p)
                                 for p, g in pieces)
    return "".join(p for p, _ in pieces)


def check(text: str) -> str | None:
    """What in ``text`` needs a shell, if anything (checked when the task is declared)."""
    try:
        template_words(text, None)
    except ShellSyntax as exc:
        return str(exc)
    return None
