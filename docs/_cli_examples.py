"""A MkDocs hook (mkdocs.yml ``hooks``): the CLI reference gets each command's examples.

mkdocs-click renders a command's help and options, not its epilog, where
every ``taskflow`` command keeps its examples (``taskflow COMMAND --help``
prints them last). This puts them on reference/cli.md in place of the
``<!-- cli-examples -->`` marker, from the commands themselves, so the page
and ``--help`` cannot disagree.
"""
from __future__ import annotations

from typing import Any

MARKER = "<!-- cli-examples -->"


def examples_markdown() -> str:
    """One ``### taskflow COMMAND`` section per command with examples, its lines as text."""
    from taskflow.cli import main
    parts = []
    for name, cmd in [("", main), *sorted(main.commands.items())]:
        epilog = cmd.epilog or ""
        lines = [ln.strip() for ln in epilog.splitlines()
                 if ln.strip() and ln.strip() not in ("\b", "Examples:")]
        if lines:
            title = f"taskflow {name}".strip()
            parts.append(f"### {title}\n\n```text\n" + "\n".join(lines) + "\n```\n")
    return "\n".join(parts)


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    if MARKER in markdown:
        return markdown.replace(MARKER, examples_markdown())
    return markdown
