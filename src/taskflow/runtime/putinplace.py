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
    from ..graph.registry import Registry
    from .recovery.log import ResumeLog

log = logging.getLogger(__name__)

# files moved whose resume-log records go in one frame (one write, not one a file); a
# crash among them costs at most this many outputs a rerun on a resume, never a wrong one
MOVES_PER_RECORD = 256


def materialize_all(registry: Registry, resume_log: ResumeLog | None, *, interrupted: bool,
                    idle: bool = False) -> list[str]:
    """Every file's last version at its path (``idle``: nothing runs, so versions are moved,
    not copied; ``interrupted``: the run was, as :func:`~taskflow.graph.registry.materialize`
    takes it); a resumable run's log says where each went. Returns why each version that
    could not be put there was kept (said here; each fails the run)."""
    from ..graph.registry import materialize
    from ..journal.failure import describe
    kept = []
    moves: list[tuple[str, str]] = []     # (version, path) moved, not in the log yet
    try:
        for item in list(registry.files.values()):
            try:
                moved = materialize(item, finished=interrupted, move=idle)
                if moved is not None and resume_log is not None and item.path is not None:
                    moves.append((moved, item.path))      # (a resume finds it there)
                    if len(moves) >= MOVES_PER_RECORD:
                        resume_log.moved_all(moves)
                        moves = []
            except OSError as exc:      # never lost: the version stays, the run fails
                why = (f"could not put {item.path} in place "
                       f"({describe('output', item.path or '', exc)}): the task's file is "
                       f"kept at {item.latest._path}")
                log.error("%s", why)
                kept.append(why)
    finally:
        if moves and resume_log is not None:
            resume_log.moved_all(moves)
    return kept


def remove_data(data_dir: str, run_dir: str) -> None:
    """The version store goes; the run directory too when nothing else (a journal) is in it."""
    shutil.rmtree(data_dir, ignore_errors=True)
    try:
        os.rmdir(run_dir)
    except OSError:
        pass
