"""A map's command line and files made into one program task's parameters, and checked.

The command's first word is the program (fixed: to run a different program
per item, run a shell: ``sh -c '{}'``). Each later word is a literal word of
the ``@binary`` args template when it holds no placeholder (and nothing the
template would read: blanks, ``$``, braces), else a parameter filled per item.
A word that is exactly an ``--in`` / ``--out`` template (or an option's
prefix and one, ``--output={}.txt``) is that file parameter: the program is given
the path the node gives, which for an output is the new version's path,
moved into place when the item ended well. ``--stdout`` / ``--stderr`` files
are the program's streams. ``TASKFLOW_INDEX`` and ``TASKFLOW_ITEM`` are
parameters too, set in the program's environment and not on its argv.

:func:`check_items` reads every item once before anything runs: a field
missing from an object, two items writing one file (named, both), an input
file that does not exist.
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from typing import Any, Iterator, Sequence

from ..errors import UsageError
from .placeholders import Template, compile_template
from .sources import Source, product, total

ENV = ("TASKFLOW_INDEX", "TASKFLOW_ITEM")
_LITERAL = re.compile(r"^[A-Za-z0-9_./:=,+@%^-]+$")
CHECK_PARTITION = 1_000_000     # output paths held at once by the collision check


@dataclass
class FileDecl:
    """One ``--in`` / ``--out`` / ``--stdout`` / ``--stderr`` template as a parameter."""

    option: str
    template: Template
    name: str                       # the parameter's name
    direction: Any                  # its Param (FILE_IN, FILE_OUT, FILE_OUT_STDOUT, ...)
    on_argv: bool = False
    prefix: str | None = None       # glued before the path on the command line


@dataclass
class ItemPlan:
    """What every item of a map shares, and how one item fills it."""

    program: str
    sources: Sequence[Source]
    args: str                                   # the @binary args template
    names: list[str]                            # the task's parameters, in order
    words: list[tuple[str, Template]]           # parameters filled from the command line
    files: list[FileDecl]
    directions: dict[str, Any] = field(default_factory=dict)
    item: Template | None = None

    def __len__(self) -> int:
        return total(self.sources)

    def items(self) -> Iterator[tuple[int, tuple[Any, ...]]]:
        """(index from 1, the sources' values) of every item, lazily."""
        return enumerate(product(self.sources), 1)

    def arguments(self, index: int, values: tuple[Any, ...]) -> tuple[Any, ...]:
        """The task's positional arguments for one item."""
        assert self.item is not None
        return (str(index), self.item.fill(index, values),
                *[t.fill(index, values) for _, t in self.words],
                *[f.template.fill(index, values) for f in self.files])


def plan_items(command: Sequence[str], sources: Sequence[Source], ins: Sequence[str],
               outs: Sequence[str], stdout: str | None, stderr: str | None) -> ItemPlan:
    """Read the command line and the file options into an :class:`ItemPlan` (UsageError)."""
    from ..api.parameter import (FILE_IN, FILE_OUT, FILE_OUT_STDERR, FILE_OUT_STDOUT,
                                 Prefix, Type)
    if not command:
        raise UsageError("no command: write it after the options and --, e.g. "
                         "taskflow map --range 1-10 -- echo {}")
    prog = compile_template(command[0], "the program", sources)
    if not prog.constant or not command[0]:
        raise UsageError(f"the program {command[0]!r} must be one fixed program (its "
                         f"placeholders would make a different program per item); run a "
                         f"shell for that: -- sh -c '{command[0]}'")
    files: list[FileDecl] = []
    for opt, texts, direction in (("--in", ins, FILE_IN), ("--out", outs, FILE_OUT)):
        for k, text in enumerate(texts):
            if not text:
                raise UsageError(f"{opt} '': a file template cannot be empty")
            t = compile_template(text, opt, sources)
            files.append(FileDecl(opt, t, f"{opt[2:]}{k}", direction))
    for opt, stream, direction in (("--stdout", stdout, FILE_OUT_STDOUT),
                                   ("--stderr", stderr, FILE_OUT_STDERR)):
        if stream is not None:
            if not stream:
                raise UsageError(f"{opt} '': a file template cannot be empty")
            files.append(FileDecl(opt, compile_template(stream, opt, sources), opt[2:],
                                  direction, on_argv=True))
    outputs = [f for f in files if f.option == "--out"]
    args: list[str] = []
    words: list[tuple[str, Template]] = []
    for i, word in enumerate(command[1:], 1):
        decl = next((f for f in files if f.option in ("--in", "--out")
                     and word.endswith(f.template.text)
                     and _plain(word[:len(word) - len(f.template.text)])), None)
        if decl is not None:
            prefix = word[:len(word) - len(decl.template.text)] or None
            if decl.on_argv and decl.prefix != prefix:
                raise UsageError(f"{decl.option} {decl.template.text!r} is given to the program "
                                 f"twice, as {word!r} and with another prefix; give it once")
            decl.on_argv, decl.prefix = True, prefix
            args.append("{{" + decl.name + "}}")
            continue
        for f in outputs:
            if f.template.text in word:
                raise UsageError(f"--out {f.template.text!r} is inside the argument {word!r}: "
                                 f"an output file must be a whole argument (or a fixed prefix "
                                 f"and the file, --output={f.template.text}), because the "
                                 f"program is given the path it writes, moved into place when "
                                 f"the item ends; or use --stdout {f.template.text!r}")
        t = compile_template(word, f"argument {i} of the command", sources)
        if t.constant and _LITERAL.match(word):
            args.append(word)
        else:
            name = f"w{i}"
            words.append((name, t))
            args.append("{{" + name + "}}")
    for f in outputs:
        if not f.on_argv:
            raise UsageError(f"--out {f.template.text!r} is not an argument of the command: "
                             f"the program must be told where to write (it is given the path "
                             f"of the new version, moved into place when the item ends); put "
                             f"{f.template.text} in the command, or use --stdout")
    plan = ItemPlan(command[0], sources, " ".join(args),
                    [*ENV, *(n for n, _ in words), *(f.name for f in files)], words, files)
    plan.directions = {f.name: {Type: f.direction, Prefix: f.prefix} if f.prefix else
                       f.direction for f in files}
    plan.item = compile_template("{}", "TASKFLOW_ITEM", sources)
    return plan


def _plain(prefix: str) -> bool:
    """A prefix a file argument may have: none, or an option's (``--output=``, ``-o``)."""
    return not prefix or (prefix.startswith("-") and "{" not in prefix and "}" not in prefix
                          and not any(c.isspace() for c in prefix))


def check_items(plan: ItemPlan) -> None:
    """Every item read once before any runs (UsageError): the fields each template names
    exist in its object, no two items write one file, every input file exists. The
    collision check holds at most CHECK_PARTITION paths at a time (more: more passes)."""
    templates = [t for _, t in plan.words] + [f.template for f in plan.files]
    fielded = [t for t in templates if t.fields]
    outs = [f for f in plan.files if f.option not in ("--in",)]
    ins = [f for f in plan.files if f.option == "--in"]
    if not (fielded or outs or ins):
        return
    n = len(plan)
    passes = max(1, math.ceil(n * len(outs) / CHECK_PARTITION)) if outs else 1
    for part in range(passes):
        seen: dict[int, tuple[int, str]] = {}
        for index, values in plan.items():
            if part == 0:
                for t in fielded:
                    for name, src in t.fields:
                        obj = values[src]
                        if not isinstance(obj, dict) or name not in obj:
                            raise UsageError(
                                f"item {index}: {{{name}}} in {t.text!r} names a field that "
                                f"item {_short(obj)} does not have")
                for f in ins:
                    path = f.template.fill(index, values)
                    if not os.path.exists(path):
                        raise UsageError(f"item {index}: --in {f.template.text!r} is {path}, "
                                         f"which does not exist (inputs must exist when the "
                                         f"map starts)")
            for f in outs:
                path = os.path.abspath(f.template.fill(index, values))
                h = hash(path)
                if h % passes != part:
                    continue
                first = seen.get(h)
                if first is None:
                    seen[h] = (index, f.name)
                elif _path_of(plan, first) == path:
                    other = next(g for g in plan.files if g.name == first[1])
                    who = (f"item {index} would write {path} twice" if first[0] == index else
                           f"items {first[0]} and {index} would both write {path}")
                    raise UsageError(
                        f"{who} ({other.option} {other.template.text!r} and {f.option} "
                        f"{f.template.text!r}); make the file names differ, e.g. with {{#}} "
                        f"(the item's index)")


def _path_of(plan: ItemPlan, first: tuple[int, str]) -> str | None:
    """The path item ``first[0]``'s ``first[1]`` file has (a rare hash match: read again)."""
    for index, values in plan.items():
        if index == first[0]:
            for f in plan.files:
                if f.name == first[1]:
                    return os.path.abspath(f.template.fill(index, values))
    return None


def _short(obj: Any) -> str:
    from .placeholders import text_of
    t = text_of(obj)
    return t if len(t) <= 60 else t[:57] + "..."
