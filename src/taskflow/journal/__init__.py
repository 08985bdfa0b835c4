"""The run journal: a SQLite database per run (see :mod:`.schema`).

The reader's names load on first use (PEP 562): the master imports
:mod:`.writer` at start-up and must not pay for ``sqlite3`` there (the
writer process opens the database).
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .schema import JOURNAL_NAME

if TYPE_CHECKING:
    from .reader import Journal, RunNotFound, list_runs, resolve_run, runs_root

__all__ = ["Journal", "RunNotFound", "list_runs", "resolve_run", "runs_root", "JOURNAL_NAME"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        value = getattr(importlib.import_module(".reader", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
