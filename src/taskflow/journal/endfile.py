"""A run's end kept beside a journal that would not take it.

A run whose journal could not be written (locked by another process past the
wait, a full disk, a damaged file) fails loudly; its writer then tries to
write the run's end (``failed`` and why) into the journal, in the room the
reserve file kept (writer.py). When even that fails, the run row would still
say ``running``, and readers, finding the master gone, would say it was
killed. So the master keeps the end in :data:`END_NAME` beside the journal
(:func:`keep`), and the reader takes it from there (:func:`read`): ``taskflow
status`` says the run failed and that its journal could not be written.
"""
from __future__ import annotations

import json
import os
import sqlite3
from typing import Any

END_NAME = "journal-end.json"


def _recorded(path: str) -> bool:
    """The journal's run row says the run ended (not ``running``)."""
    try:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0)
    except sqlite3.Error:
        return False
    try:
        row = db.execute("SELECT state FROM run").fetchone()
        return row is not None and row[0] != "running"
    except sqlite3.Error:
        return False
    finally:
        db.close()


def keep(path: str, t_end: float, state: str, reason: str) -> bool:
    """After a failed write of the journal at ``path``: the run's end in :data:`END_NAME`
    beside it, unless the journal says it already. False if it could not be kept."""
    if _recorded(path):
        return True
    end = os.path.join(os.path.dirname(path), END_NAME)
    try:
        fd = os.open(end + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump({"t_end": t_end, "state": state, "reason": reason}, f)
        os.replace(end + ".tmp", end)
        return True
    except OSError:
        return False


def read(run_dir: str) -> dict[str, Any] | None:
    """The end :func:`keep` kept for the run in ``run_dir`` (None: none, or unreadable)."""
    try:
        with open(os.path.join(run_dir, END_NAME), encoding="utf-8") as f:
            end = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(end, dict) or not isinstance(end.get("state"), str):
        return None
    reason = str(end.get("reason") or "")
    return {"t_end": end.get("t_end"), "state": end["state"],
            "reason": f"{reason} (the journal could not be written, not even the run's end: "
                      f"it is kept in {END_NAME} beside it)"}
