"""Files at the user's paths at the end of a run, and the run's data left behind.

A file a task wrote lives in the run's version store until the run puts its last
version at the user's path (moved when nothing runs, else copied). A version that
cannot be put there is never lost: it stays in the store, the run fails naming both
paths, and the store is kept (``kept_versions``).
"""
from __future__ import annotations

import logging
import os
import shutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .runtime import Runtime

log = logging.getLogger(__name__)


def materialize_all(rt: Runtime, idle: bool = False) -> None:
    """Every file's last version at its path; a resumable run's log says where it went."""
    from ..graph.registry import materialize
    from ..journal.failure import describe
    for item in list(rt.registry.files.values()):
        try:
            moved = materialize(item, finished=rt.interrupted is not None, move=idle)
            if moved is not None and rt.log is not None and item.path is not None:
                rt.log.moved(moved, item.path)    # (a resume finds it there)
        except OSError as exc:      # never lost: the version stays, the run fails
            why = (f"could not put {item.path} in place "
                   f"({describe('output', item.path or '', exc)}): the task's file is kept "
                   f"at {item.latest._path}")
            log.error("%s", why)
            rt.fail_run(why)
            rt.kept_versions = True


def remove_data(data_dir: str, run_dir: str) -> None:
    """The version store goes; the run directory too when nothing else (a journal) is in it."""
    shutil.rmtree(data_dir, ignore_errors=True)
    try:
        os.rmdir(run_dir)
    except OSError:
        pass
