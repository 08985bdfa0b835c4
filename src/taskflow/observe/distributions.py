"""Per task name: how the run time, CPU time, %CPU and peak memory of its tasks spread.

What the report's box plots draw, as Nextflow's resource plots: for each
task name the quartiles, the whiskers (the furthest values within 1.5 times
the interquartile range), the mean and a few outliers. A plot shows at most
:data:`NAMES_MAX` names (those with the most run time); the others are one
row, and the report says so. %CPU is CPU time over run time (100 % is one
busy core) of the tasks that ran at least :data:`PCT_MIN_S`: shorter ones
are not long enough for the ratio to mean anything.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

NAMES_MAX = 30
PCT_MIN_S = 0.1           # s: tasks shorter than this get no %CPU
OUTLIERS_MAX = 12         # per box: the most extreme ones

METRICS = (  # key, title, unit kind
    ("seconds", "run time", "time"),
    ("queued", "time ready but waiting for a slot", "time"),
    ("cpu", "CPU time", "time"),
    ("cpu_pct", "%CPU (CPU time / run time; 100 = one core)", "percent"),
    ("rss", "peak memory (resident)", "bytes"),
    ("read", "bytes read", "bytes"),
    ("written", "bytes written", "bytes"),
)


def stats(values: Sequence[float]) -> dict[str, Any] | None:
    """The box of ``values`` (None when empty)."""
    if not values:
        return None
    v = sorted(values)
    n = len(v)

    def q(p: float) -> float:
        k = (n - 1) * p
        lo = math.floor(k)
        hi = min(lo + 1, n - 1)
        return v[lo] + (v[hi] - v[lo]) * (k - lo)
    q1, med, q3 = q(0.25), q(0.5), q(0.75)
    reach = 1.5 * (q3 - q1)
    inside = [x for x in v if q1 - reach <= x <= q3 + reach] or v
    low = [x for x in v if x < inside[0]]
    high = [x for x in v if x > inside[-1]]
    half = OUTLIERS_MAX // 2
    return {"n": n, "min": v[0], "max": v[-1], "q1": q1, "med": med, "q3": q3,
            "lo": inside[0], "hi": inside[-1], "mean": sum(v) / n,
            "outliers": low[:half] + high[-half:], "outliers_total": len(low) + len(high)}


def per_name(ran: Sequence[dict[str, Any]], usage: dict[int, tuple[Any, ...]],
             queued: dict[int, float]) -> dict[str, Any]:
    """{"names": shown names, "other": names merged, "metrics": {key: [(name, stats)]},
    "measured": tasks with usage, "pct_short": measured tasks too short for a %CPU}."""
    run_time: dict[str, float] = {}
    for t in ran:
        run_time[t["name"]] = run_time.get(t["name"], 0.0) + t["t_end"] - t["t_start"]
    names = sorted(run_time, key=lambda n: (-run_time[n], n))
    shown = set(names[:NAMES_MAX])
    other = f"other names ({len(names) - len(shown)})"
    values: dict[str, dict[str, list[float]]] = {k: {} for k, _, _ in METRICS}
    measured = short = 0
    for t in ran:
        name = t["name"] if t["name"] in shown else other
        secs = t["t_end"] - t["t_start"]
        values["seconds"].setdefault(name, []).append(secs)
        if t["id"] in queued:
            values["queued"].setdefault(name, []).append(queued[t["id"]])
        u = usage.get(t["id"])
        if u is None:
            continue
        measured += 1
        cpu, rss = u[0], u[1]
        values["cpu"].setdefault(name, []).append(cpu)
        values["rss"].setdefault(name, []).append(float(rss))
        if secs >= PCT_MIN_S:
            values["cpu_pct"].setdefault(name, []).append(100.0 * cpu / secs)
        else:
            short += 1
        if len(u) > 3 and u[2] is not None:
            values["read"].setdefault(name, []).append(float(u[2]))
            values["written"].setdefault(name, []).append(float(u[3] or 0))
    order = [n for n in names if n in shown] + ([other] if len(names) > len(shown) else [])
    metrics = {}
    for key, _, _ in METRICS:
        rows = []
        for n in order:
            s = stats(values[key].get(n, []))
            if s is not None:
                rows.append((n, s))
        metrics[key] = rows
    return {"names": order, "other": len(names) - len(shown), "metrics": metrics,
            "measured": measured, "pct_short": short}


def fmt_bytes(b: float) -> str:
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(b) >= size:
            return f"{b / size:.3g} {unit}"
    return f"{b:.0f} B"


def fmt_time(s: float) -> str:
    if s >= 3600:
        return f"{s / 3600:.3g} h"
    if s >= 60:
        return f"{s / 60:.3g} min"
    if s >= 1:
        return f"{s:.3g} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs" if s > 0 else "0 s"


def fmt_pct(p: float) -> str:
    return f"{p:.0f} %" if abs(p) >= 10 or p == 0 else f"{p:.2g} %"


FORMATS = {"time": fmt_time, "bytes": fmt_bytes, "percent": fmt_pct}
