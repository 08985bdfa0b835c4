"""What moving values cost, in words: ``taskflow status``, ``taskflow logs RUN TASK`` and the
report read the journal's ``moves`` table through these.

A value over the inline limit stays on the node that made it; bringing it to the
master (a ``wait_on``) or to another node (a task placed there) takes time that no
task's run time includes. A task returning 1.6 GB made it in seconds and moved it
in thirty: this is where those thirty seconds are said.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .distributions import fmt_bytes, fmt_time

if TYPE_CHECKING:
    from ..journal.reader import Journal

SHOWN = 10      # moves listed one by one (the longest first)


def _one(m: dict[str, Any], names: dict[int, str]) -> str:
    took = max(0.0, m["t_end"] - m["t_start"])
    made = m["producer"]
    what = f"the value of task {made} {names.get(made, '?')}" if made else "a value"
    to = "the master" if m["dst"] == "master" else m["dst"]
    why = f" for task {m['task_id']} {names.get(m['task_id'], '?')}" if m["task_id"] else ""
    return f"{what}: {fmt_bytes(m['bytes'] or 0)} from {m['src']} to {to}{why} in " \
           f"{fmt_time(took)}"


def totals(j: Journal) -> str:
    """One line, '' when nothing moved: 'values moved: 2 to the master (1.6 GB, 30.2 s),
    ...'."""
    moved = j.moved()
    if not moved:
        return ""
    parts = [f"{n} {where} ({fmt_bytes(b)}, {fmt_time(s)})"
             for where, (n, b, s) in sorted(moved.items(), reverse=True)]
    return "values moved: " + ", ".join(parts)


def longest(j: Journal, limit: int = SHOWN) -> list[str]:
    """The ``limit`` longest moves, one line each."""
    ms = sorted(j.moves(), key=lambda m: m["t_end"] - m["t_start"], reverse=True)[:limit]
    ids = sorted({i for m in ms for i in (m["producer"], m["task_id"]) if i})
    names = j.names_of(ids)
    return [_one(m, names) for m in ms]


def of_task(j: Journal, tid: int) -> list[str]:
    """The moves of one task's value and of its inputs, one line each."""
    ms = j.moves(task=tid)
    ids = sorted({i for m in ms for i in (m["producer"], m["task_id"]) if i})
    names = j.names_of(ids)
    return [_one(m, names) for m in ms]
