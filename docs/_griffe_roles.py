"""A griffe extension for the API reference (mkdocs.yml: mkdocstrings' ``extensions``).

taskflow's docstrings are written for a terminal (``help()``) in reST habits:
``:class:`~taskflow.errors.TaskError``` roles and ``::`` before an indented
example. mkdocstrings renders docstrings as Markdown, where both show as
noise; this turns a role into inline code of the name it points at and a
paragraph's closing ``::`` into ``:`` (the indented block below it is a code
block in Markdown too). The docstrings in src/ stay as they are.
"""
from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:class|func|meth|mod|attr|exc|data|obj):`~?([^`]+)`")
_LITERAL = re.compile(r"(\S)::[ \t]*$", re.MULTILINE)


def _short(match: re.Match[str]) -> str:
    target = match.group(1)
    whole = match.group(0)
    name = target.rsplit(".", 1)[-1] if "`~" in whole else target
    return f"`{name}`"


def markdown_of(text: str) -> str:
    text = _ROLE.sub(_short, text)
    return _LITERAL.sub(r"\1:", text)


class ReSTRoles(griffe.Extension):
    """Rewrite reST roles and ``::`` in every docstring griffe loads."""

    def on_object(self, *, obj: griffe.Object, loader: Any = None, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_of(obj.docstring.value)
