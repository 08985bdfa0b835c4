"""The SPA accounting: workers held over time, and the queue wait of each job.

In the SPA pilot-job study (shared/ANCHORS.md) w(t) is the number of workers
a run holds at time t, W = (1/M) ∫ w(t) dt its time average over the makespan
M, and the makespan model is M = C / W with C the total work. Here a worker
is a slot: w(t) steps up by a node's slots when it joins and down when it
leaves or is lost (the journal's ``nodes`` rows). The report sets C / W_held
against M: the gap is the time workers were held but idle (M = C / W holds
exactly for the *busy* slots, which :mod:`taskflow.observe.report` also
shows).

Slurm nodes carry their job id, the time the job was submitted and the time
Slurm started it (``job_submitted``, ``job_started`` in the node's info), so
each job's queue wait is known.
"""
from __future__ import annotations

from typing import Any


def steps(deltas: list[tuple[float, int]], lo: float | None = None) -> list[tuple[float, int]]:
    """The step curve [(t, level)] of changes ``(t, +k / -k)`` (sorted here; one step per
    time; from ``(lo, 0)`` when given)."""
    deltas.sort()
    out: list[tuple[float, int]] = [] if lo is None else [(lo, 0)]
    w = 0
    for t, d in deltas:
        w += d
        if out and out[-1][0] == t:
            out[-1] = (t, w)
        else:
            out.append((t, w))
    return out


def held_curve(nodes: list[dict[str, Any]], lo: float, hi: float) -> list[tuple[float, int]]:
    """[(t, w)] steps of the slots held, from ``lo`` to ``hi`` (w holds until the next t)."""
    deltas: list[tuple[float, int]] = []
    for n in nodes:
        slots = int(n.get("slots") or 0)
        a = n.get("t_join")
        if a is None or not slots:
            continue
        b = n.get("t_lost") or hi
        a, b = max(a, lo), min(b, hi)
        if b > a:
            deltas.append((a, slots))
            if b < hi:                    # still held at the end: no step down inside
                deltas.append((b, -slots))
    out = steps(deltas, lo)
    merged: list[tuple[float, int]] = []
    for t, v in out:
        if merged and merged[-1][1] == v:
            continue
        merged.append((t, v))
    return merged


def integral(curve: list[tuple[float, int]], hi: float) -> float:
    """∫ w(t) dt of a step curve up to ``hi``."""
    total = 0.0
    for (t, w), nxt in zip(curve, curve[1:] + [(hi, 0)]):
        total += w * max(0.0, min(nxt[0], hi) - t)
    return total


def _time(v: Any) -> float | None:
    """An epoch time from a node's info (written by another version, maybe): else None."""
    try:
        v = float(v)
    except (TypeError, ValueError):
        return None
    return v if v > 0 else None


def jobs(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per Slurm job (nodes without a job id are left out), in join order.

    ``submitted`` and ``started`` come from the node's info (``job_submitted``,
    ``job_started``: None when the provider did not give them); ``left`` is
    when the job's last node left, None while one of them is still held.
    """
    by: dict[str, dict[str, Any]] = {}
    held: dict[str, int] = {}
    for n in nodes:
        info = n.get("info") or {}
        jid = info.get("job_id")
        if jid in (None, ""):
            continue
        j = by.setdefault(str(jid), {"job_id": str(jid), "nodes": [], "submitted": None,
                                     "started": None, "joined": None, "left": None,
                                     "reason": None})
        j["nodes"].append(n["name"])
        j["submitted"] = _time(info.get("job_submitted")) or j["submitted"]
        j["started"] = _time(info.get("job_started")) or j["started"]
        if n.get("t_join") and (j["joined"] is None or n["t_join"] < j["joined"]):
            j["joined"] = n["t_join"]
        if n.get("t_lost"):
            j["left"] = max(j["left"] or 0.0, n["t_lost"])
            j["reason"] = n.get("reason")
        else:
            held[j["job_id"]] = held.get(j["job_id"], 0) + 1
    for j in by.values():
        if held.get(j["job_id"]):
            j["left"] = None
        start = j["started"] or j["joined"]
        j["queue_wait"] = (start - j["submitted"]) if (start and j["submitted"]) else None
    return list(by.values())


def step_table(curve: list[tuple[float, int]], t0: float, limit: int = 24) -> list[str]:
    """Markdown rows ``| t | w |`` (at most ``limit``; the rest are summarised)."""
    rows = [f"| {t - t0:.2f} | {w} |" for t, w in curve[:limit]]
    if len(curve) > limit:
        rows.append(f"| ... | {len(curve) - limit} more steps |")
    return rows
