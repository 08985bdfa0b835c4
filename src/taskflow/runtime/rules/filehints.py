"""A failed task's message in the user's paths, and what a misdeclared file means.

A task writes a file parameter into a fresh version path under the run's
``data/`` (``d2v1/input.csv``), put at the user's path when the run is done
with it. An error that names the version path names a file the user never
gave: the message and traceback say the user's path instead. And a task that
could not open its FILE_OUT parameter almost always *reads* it (FILE_OUT gives
it a new, empty path to write): the message says so, with the fix.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...wire import messages as M

if TYPE_CHECKING:
    from ...graph.task import Task

_NOT_THERE = ("FileNotFoundError", "NotADirectoryError", "IsADirectoryError")


def in_user_paths(task: Task, etype: str, emsg: str, tb: str) -> tuple[str, str]:
    """``(message, traceback)`` with the task's file versions named by the user's paths,
    and the fix added to the message when the task read a file it declared FILE_OUT."""
    for e in task.inouts or ():
        if e.kind == M.OUT_OBJECT:
            continue
        version = e.version._path
        item = e.version._item
        user = item.path if item is not None else None
        if not version or not user or (version not in emsg and version not in tb):
            continue
        said = version in emsg
        emsg = emsg.replace(version, user)
        tb = tb.replace(version, user)
        param = task.spec.params.get(e.pname)
        if said and etype in _NOT_THERE and param is not None and param.direction == "OUT":
            kind = "DIRECTORY" if e.kind == M.OUT_DIR else "FILE"
            emsg += (f" (parameter '{e.pname}' is {kind}_OUT: the task gets a new, empty "
                     f"path to write {user} to, not the {kind.lower()} that is there; if the "
                     f"task reads it, declare {e.pname}={kind}_IN, or {kind}_INOUT to change "
                     f"it)")
    return emsg, tb
