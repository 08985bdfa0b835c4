"""Where runs are kept, defined once for the runtime, the commands and the monitor.

No ``sqlite3`` here: the master imports this at start-up (see the package's
docstring).
"""
from __future__ import annotations

import os

ENV = "TASKFLOW_RUN_DIR"
DEFAULT = os.path.join(".taskflow", "runs")


def runs_root(root: str | None = None) -> str:
    """Where runs are kept: ``root``, ``$TASKFLOW_RUN_DIR`` or ``.taskflow/runs`` (absolute)."""
    return os.path.abspath(root or os.environ.get(ENV) or DEFAULT)
