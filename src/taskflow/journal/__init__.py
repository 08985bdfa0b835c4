"""The run journal: a SQLite database per run (see :mod:`.schema`)."""
from __future__ import annotations

from .reader import Journal, RunNotFound, list_runs, resolve_run, runs_root
from .schema import JOURNAL_NAME

__all__ = ["Journal", "RunNotFound", "list_runs", "resolve_run", "runs_root", "JOURNAL_NAME"]
