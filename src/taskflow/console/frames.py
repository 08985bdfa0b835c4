"""A task's traceback as a person reads it: the frames of their code, taskflow's folded.

Text in, text out (no other part of taskflow is imported): the end of a run's
report (:mod:`.failures`) and the notebook's views (:mod:`taskflow.notebook.html`)
read a remote traceback through these.
"""
from __future__ import annotations

import os
import re

_PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_OURS = sorted(n[:-3] if n.endswith(".py") else n for n in os.listdir(_PKG)
               if n != "__pycache__" and not n.startswith(".") and "." not in n[:-3])
# taskflow's own files wherever the package is installed (a node may have it elsewhere)
_FRAMEWORK = re.compile(r'File "(?:[^"]*[/\\])?(?:taskflow[/\\](?:' + "|".join(map(re.escape, _OURS))
                        + r')\b[^"]*|<frozen runpy>|[^"]*[/\\]runpy\.py|[^"]*[/\\]cloudpickle[/\\][^"]*)"')
FRAME = re.compile(r'^\s*File "')


def fold_traceback(tb: str) -> tuple[list[str], int]:
    """The lines of a formatted traceback without taskflow's frames; (lines, frames folded).

    A frame is its ``File "...", line N, in f`` line and the indented lines under
    it (the source line, the ``^^^`` marks). Runs of framework frames become
    one ``... N taskflow frame(s)`` line.
    """
    out: list[str] = []
    folded = run = 0
    skipping = False
    for line in tb.rstrip("\n").splitlines():
        if FRAME.match(line):
            skipping = bool(_FRAMEWORK.search(line))
            if skipping:
                folded += 1
                run += 1
                continue
            if run:
                out.append(f"  ... {run} taskflow frame{'s' if run != 1 else ''}")
                run = 0
            out.append(line)
            continue
        if skipping and line.startswith("    "):
            continue                    # the source line and marks of a folded frame
        skipping = False
        if run:
            out.append(f"  ... {run} taskflow frame{'s' if run != 1 else ''}")
            run = 0
        out.append(line)
    return out, folded


def user_frames(tb: str) -> list[str]:
    """Only the frames of the user's code (with their source lines), no headers."""
    lines, _ = fold_traceback(tb)
    out: list[str] = []
    keep = False
    for line in lines:
        if FRAME.match(line):
            keep = True
            out.append(line)
        elif keep and line.startswith("    "):
            out.append(line)
        else:
            keep = False
    return out
