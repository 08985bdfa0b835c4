"""GNU Parallel's placeholders in a map's command line and file names.

``{}`` the item (several sources: their values joined by a space), ``{#}``
its index (1 for the first item), ``{N}`` the value of the N-th source,
``{name}`` a field of a JSON object item, ``{.}`` ``{/}`` ``{//}`` ``{/.}``
(and ``{N.}`` ...) the value without its extension, its base name, its
directory, its base name without extension; ``{{`` and ``}}`` are literal
braces. A brace text that is none of these and not a name (``{print $1}``
for awk) is kept as it is, as GNU Parallel keeps it. A value that is not a
string (a number, an object of a JSON list) is written as compact JSON.

A template is compiled once (:func:`compile_template`), checked against the
sources before anything runs, and filled per item (:meth:`Template.fill`).
"""
from __future__ import annotations

import json
import os
import re
from typing import Any, Sequence

from ..errors import UsageError
from .sources import Source

_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_POSITIONAL = re.compile(r"^(\d*)(\.|/|//|/\.)?$")
_FIELD = re.compile(r"^[A-Za-z_]\w*$")


def text_of(value: Any) -> str:
    """An item's value as it goes into a command line."""
    if isinstance(value, str):
        return value
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _modified(text: str, mod: str) -> str:
    if not mod:
        return text
    if mod == ".":
        root, ext = os.path.splitext(text)
        return root if "/" not in ext else text
    if mod == "/":
        return os.path.basename(text)
    if mod == "//":
        return os.path.dirname(text) or "."
    return os.path.splitext(os.path.basename(text))[0]     # "/."


class Template:
    """A compiled template: literal pieces and what fills the others."""

    def __init__(self, text: str, parts: list[Any]) -> None:
        self.text = text
        self.parts = parts            # str | ("#",) | ("v", source index or None, mod) |
        #                               ("f", field name, source index)
        self.constant = all(isinstance(p, str) for p in parts)
        self.fields = tuple((p[1], p[2]) for p in parts if isinstance(p, tuple) and p[0] == "f")

    def fill(self, index: int, values: tuple[Any, ...]) -> str:
        out: list[str] = []
        for p in self.parts:
            if isinstance(p, str):
                out.append(p)
            elif p[0] == "#":
                out.append(str(index))
            elif p[0] == "v":
                src, mod = p[1], p[2]
                text = " ".join(map(text_of, values)) if src is None else text_of(values[src])
                out.append(_modified(text, mod))
            else:
                out.append(text_of(values[p[2]][p[1]]))
        return "".join(out)

    def literal_prefix(self) -> str:
        """The literal text before the first placeholder."""
        pre = []
        for p in self.parts:
            if not isinstance(p, str):
                break
            pre.append(p)
        return "".join(pre)


def compile_template(text: str, where: str, sources: Sequence[Source]) -> Template:
    """``text`` read into a :class:`Template`; a placeholder that names no source or field is
    a UsageError naming ``where``."""
    parts: list[Any] = []
    lit: list[str] = []
    pos = 0
    for m in _TOKEN.finditer(text):
        lit.append(text[pos:m.start()])
        pos = m.end()
        tok = m.group(0)
        if tok in ("{{", "}}"):
            lit.append(tok[0])
            continue
        inner = m.group(1)
        part = _placeholder(inner, tok, text, where, sources)
        if part is None:                # not a placeholder: kept as written (awk's {print})
            lit.append(tok)
            continue
        if lit:
            parts.append("".join(lit))
            lit = []
        parts.append(part)
    lit.append(text[pos:])
    if "".join(lit):
        parts.append("".join(lit))
    return Template(text, parts)


def _placeholder(inner: str, tok: str, text: str, where: str,
                 sources: Sequence[Source]) -> Any:
    if inner == "#":
        return ("#",)
    m = _POSITIONAL.match(inner)
    if m is not None:
        num, mod = m.group(1), m.group(2) or ""
        if not num:
            return ("v", None, mod)
        n = int(num)
        if not 1 <= n <= len(sources):
            raise UsageError(f"{where}: {tok} in {text!r} names source {n}, but the map has "
                             f"{len(sources)} source(s) ({', '.join(s.option for s in sources)})"
                             f"; for a literal brace write {{{{{inner}}}}}")
        return ("v", n - 1, mod)
    if _FIELD.match(inner):
        for i, s in enumerate(sources):
            if inner in s.fields:
                return ("f", inner, i)
        known = sorted({f for s in sources for f in s.fields})
        have = (f"the items' fields are {', '.join(known)}" if known else
                "the items have no fields (only the objects of a --from-json list do)")
        raise UsageError(f"{where}: {tok} in {text!r} names no field of the items: {have}. "
                         f"Placeholders: {{}} {{#}} {{.}} {{/}} {{//}} {{/.}} {{1}}...; for a "
                         f"literal brace write {{{{{inner}}}}}")
    return None
