"""Default output values of a failed task whose policy lets the run go on.

With ``IGNORE`` or ``CANCEL_SUCCESSORS`` a failed task's outputs are
``None``, unless its spec gives defaults (PyCOMPSs's
``@on_failure(management="IGNORE", returns=0, f_out="/path/to/default")``):
``"returns"`` gives the return values (a sequence of the task's length is
spread over several outputs), a parameter's name the value of that INOUT /
OUT object, or, for a FILE / DIRECTORY parameter, the file or directory whose
copy becomes the task's version of it. Runs on the loop thread, lock held.
"""
from __future__ import annotations

import logging
import os
import pickle
import shutil
from typing import TYPE_CHECKING, Any

from ...wire import messages as M
from ...wire import protocol as P

if TYPE_CHECKING:
    from ...future import Future
    from ...graph.task import Task

log = logging.getLogger(__name__)


def apply_defaults(task: Task, defaults: dict[str, Any]) -> None:
    if "returns" in defaults:
        value = defaults["returns"]
        outs = task.outputs
        seq = isinstance(value, (list, tuple)) and len(value) == len(outs) and len(outs) > 1
        for i, fut in enumerate(outs):
            _set(fut, value[i] if seq else value)
    for entry in task.inouts or ():
        if entry.pname not in defaults:
            continue
        value = defaults[entry.pname]
        if entry.kind == M.OUT_OBJECT:
            _set(entry.version, value)
        else:
            _copy(entry.version, value, entry.kind == M.OUT_DIR, task)


def _set(fut: Future, value: Any) -> None:
    try:
        payload = pickle.dumps(value, P.PROTOCOL)
    except Exception:  # noqa: BLE001 - e.g. a class of the script: by value
        import cloudpickle
        payload = cloudpickle.dumps(value, P.PROTOCOL)
    fut.give_default(payload, value)


def _copy(fut: Future, source: Any, is_dir: bool, task: Task) -> None:
    dest = fut._path
    if dest is None or not isinstance(source, (str, os.PathLike)):
        return
    src = os.fspath(source)
    try:
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if os.path.isdir(dest):
            shutil.rmtree(dest)
        if is_dir:
            shutil.copytree(src, dest, symlinks=True)
        else:
            shutil.copyfile(src, dest)
        fut.file_made()
    except OSError as exc:
        log.warning("task %s (id %d) failed and its default for %s could not be copied from "
                    "%s: %s", task.spec.name, task.id, os.path.basename(dest), src, exc)
