"""The report's timeline: tasks on the slots that ran them, and the queue over time.

Up to :data:`BARS_MAX` tasks (and :data:`LANES_MAX` slots) every task is a
bar on its slot (a task that held several slots is on each), coloured by
task name, outlined red when it failed, with its queue wait, run time, CPU
time and peak memory on hover. Above that one bar per task would be a file
of tens of megabytes that no one can read, so the timeline becomes the busy
slots of each task name over time, in :data:`BINS` steps, and says so. The
number of tasks ready but waiting for a slot is drawn above it (the
"queued" half of Nextflow's timeline), in the same steps when the run is
large.
"""
from __future__ import annotations

from typing import Any, Sequence

from . import svgcharts, workers
from .distributions import fmt_bytes, fmt_time

BARS_MAX = 3000
LANES_MAX = 256
BINS = 600
SERIES_MAX = 10          # task names drawn in the aggregated timeline; the rest are "other"
X_TITLE = "seconds since the first submission"


def level(intervals: Sequence[tuple[float, float, int]]) -> list[tuple[float, int]]:
    """The step curve [(t, level)] of intervals ``(start, end, weight)`` overlapping."""
    return workers.steps([(a, k) for a, b, k in intervals if b > a] +
                         [(b, -k) for a, b, k in intervals if b > a])


def binned(curve: Sequence[tuple[float, float]], lo: float, hi: float,
           bins: int = BINS) -> list[tuple[float, float]]:
    """The mean level of a step curve in each of ``bins`` equal steps of [lo, hi]."""
    if hi <= lo or not curve:
        return [(lo, 0.0)]
    width = (hi - lo) / bins
    area = [0.0] * bins
    for (t, v), nxt in zip(curve, list(curve[1:]) + [(hi, 0.0)]):
        a, b = max(t, lo), min(nxt[0], hi)
        while b > a and v:
            i = min(int((a - lo) / width), bins - 1)
            end = min(b, lo + (i + 1) * width)
            area[i] += v * (end - a)
            if end <= a:
                break
            a = end
    return [(lo + i * width, area[i] / width) for i in range(bins)]


def curve(intervals: Sequence[tuple[float, float, int]], lo: float, hi: float
          ) -> tuple[list[tuple[float, float]], bool]:
    """The level of ``intervals`` from ``lo``, exact or (when long) binned; (curve, binned)."""
    c = level(intervals)
    if len(c) > 2 * BINS:
        return [(t - lo, v) for t, v in binned(c, lo, hi)], True
    return [(t - lo, v) for t, v in c], False


def queue_svg(ready: dict[int, float], starts: dict[int, float], t0: float, t1: float) -> str:
    """Tasks ready but waiting for a slot over time."""
    iv = [(ready[i], starts[i], 1) for i in starts if i in ready and starts[i] > ready[i]]
    pts, was_binned = curve(iv, t0, t1)
    label = "tasks ready, waiting for a slot" + (f" (mean over {BINS} steps)" if was_binned else "")
    return svgcharts.steps([(label, "#e6550d", pts)], t1 - t0, "tasks", X_TITLE, height=150)


def timeline_svg(ran: list[dict[str, Any]], slots: dict[str, int],
                 usage: dict[int, tuple[Any, ...]], queued: dict[int, float],
                 colours: dict[str, str], t0: float, t1: float) -> tuple[str, str | None]:
    """(SVG, note on what was aggregated or None); ``ran`` from ``trace.slot_intervals``."""
    lanes = [f"{n}/{s}" for n in sorted(slots) for s in range(slots[n])]
    if len(ran) <= BARS_MAX and len(lanes) <= LANES_MAX:
        index = {lane: i for i, lane in enumerate(lanes)}
        bars = []
        for t in ran:
            tip = _tip(t, usage.get(t["id"]), queued.get(t["id"]))
            outline = "#b00000" if t["state"] == "FAILED" else "#333333"
            for node, lane in t["lanes"]:
                bars.append((index[f"{node}/{lane}"], t["t_start"] - t0, t["t_end"] - t0,
                             colours.get(t["name"], "#cccccc"), outline, tip))
        return svgcharts.timeline(lanes, bars, t1 - t0, X_TITLE), None
    by_name: dict[str, list[tuple[float, float, int]]] = {}
    for t in ran:
        by_name.setdefault(t["name"], []).append((t["t_start"], t["t_end"], len(t["lanes"])))
    names = sorted(by_name, key=lambda n: -sum(b - a for a, b, _ in by_name[n]))
    series = []
    for n in names[:SERIES_MAX]:
        series.append((n, colours.get(n, "#999999"), curve(by_name[n], t0, t1)[0]))
    rest = [iv for n in names[SERIES_MAX:] for iv in by_name[n]]
    if rest:
        series.append((f"{len(names) - SERIES_MAX} other names", "#999999",
                       curve(rest, t0, t1)[0]))
    note = (f"{len(ran):,} tasks on {len(lanes):,} slots: too many for one bar each, so this is "
            f"the number of busy slots per task name over time (mean over {BINS} steps when "
            f"the run is long); `taskflow trace` writes every task for Perfetto.")
    return svgcharts.steps(series, t1 - t0, "busy slots", X_TITLE, height=300), note


def _tip(t: dict[str, Any], u: tuple[Any, ...] | None, q: float | None) -> str:
    node = ", ".join(f"{n}/{s}" for n, s in t["lanes"][:4]) + (" ..." if len(t["lanes"]) > 4 else "")
    parts = [f"#{t['id']} {t['name']} on {node}: {t['state'].lower()}",
             f"ran {fmt_time(t['t_end'] - t['t_start'])}"]
    if q is not None:
        parts.append(f"queued {fmt_time(q)}")
    if u is not None:
        parts.append(f"CPU {fmt_time(u[0])}, peak memory {fmt_bytes(u[1])}")
        if len(u) > 3 and u[2] is not None:
            parts.append(f"read {fmt_bytes(u[2])}, written {fmt_bytes(u[3] or 0)}")
    return "; ".join(parts)
