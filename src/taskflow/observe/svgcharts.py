"""The report's plots as inline SVG: box plots, a timeline of the slots, step curves.

Written here rather than with a plotting library: the report must be one
file that needs no network (no CDN, no 3 MB of vendored JavaScript in every
report) and stays small for any run, and SVG gives that with hover text for
free (``<title>``), sharp print-outs and a size set by what is drawn, which
the callers bound (:mod:`.distributions` and :mod:`.timeline` aggregate
before anything is drawn). Every chart is ``width: 100%`` of its box with a
fixed aspect, so it fits a 1,400 px window and an A4 page alike.
"""
from __future__ import annotations

import math
from html import escape
from typing import Any, Callable, Sequence

WIDTH = 1200             # the viewBox's width; the page scales it to its column
LEFT = 170               # room for the row labels
FONT = 'font-family="Helvetica,Arial,sans-serif" font-size="12"'
Fmt = Callable[[float], str]


def nice_ticks(lo: float, hi: float, n: int = 6, whole: bool = False) -> list[float]:
    """About ``n`` round numbers from ``lo`` to ``hi`` (1, 2 or 5 times a power of ten);
    ``whole``: whole numbers only (a count of bytes: never 0.2 B, shown as "0 B")."""
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / max(n - 1, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    if whole:
        step = max(step, 1.0)
    first = math.ceil(lo / step - 1e-9) * step
    return [round(first + i * step, 12) for i in range(int((hi - first) / step + 1e-9) + 1)]


def log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten (with 2 and 5 between when there are few) from ``lo`` to ``hi``."""
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    mults = (1, 2, 5) if b - a <= 3 else (1,)
    return [m * 10.0 ** e for e in range(a, b + 1) for m in mults if lo <= m * 10.0 ** e <= hi]


class Scale:
    """Values to x pixels, linear or logarithmic."""

    def __init__(self, lo: float, hi: float, x0: float, x1: float, log: bool = False,
                 whole: bool = False) -> None:
        self.log = log and lo > 0
        if self.log:
            lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
        elif hi <= lo:
            hi = lo + 1.0
        self.lo, self.hi, self.x0, self.x1 = lo, hi, x0, x1
        self.ticks = log_ticks(lo, hi) if self.log else nice_ticks(lo, hi, whole=whole)
        if not self.log and self.ticks:
            self.hi = max(self.hi, self.ticks[-1])

    def __call__(self, v: float) -> float:
        if self.log:
            v = max(v, self.lo)
            f = (math.log10(v) - math.log10(self.lo)) / (math.log10(self.hi) - math.log10(self.lo))
        else:
            f = (v - self.lo) / (self.hi - self.lo)
        return self.x0 + f * (self.x1 - self.x0)


def _svg(height: float, body: list[str], label: str, width: int = WIDTH) -> str:
    return (f'<svg class="chart" viewBox="0 0 {width} {height:.0f}" role="img" '
            f'aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg" {FONT}>'
            + "".join(body) + "</svg>")


def _x_axis(body: list[str], sc: Scale, y_top: float, y: float, fmt: Fmt, title: str) -> None:
    for v in sc.ticks:
        x = sc(v)
        body.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{y_top:.1f}" y2="{y:.1f}" '
                    'stroke="#e4e4e4"/>')
        body.append(f'<text x="{x:.1f}" y="{y + 15:.1f}" text-anchor="middle">'
                    f'{escape(fmt(v))}</text>')
    body.append(f'<line x1="{sc.x0}" x2="{sc.x1}" y1="{y:.1f}" y2="{y:.1f}" stroke="#888"/>')
    body.append(f'<text x="{(sc.x0 + sc.x1) / 2:.1f}" y="{y + 32:.1f}" text-anchor="middle" '
                f'fill="#444">{escape(title)}</text>')


def boxplots(rows: Sequence[tuple[str, dict[str, Any], str]], fmt: Fmt, title: str,
             log: bool | None = None, width: int = 640, left: int = 130,
             whole: bool = False) -> str:
    """Horizontal box plots, one row per ``(label, stats, colour)``.

    ``stats`` has ``n, lo, q1, med, q3, hi`` (whiskers at 1.5 IQR within the
    data), ``mean``, ``min``, ``max`` and ``outliers`` (a bounded few).
    ``log`` None: a log axis when the values span more than two decades; ``whole``: the
    values are whole numbers (bytes): so are the ticks.
    """
    vals = [v for _, s, _ in rows for v in (s["min"], s["max"])]
    pos = [v for v in vals if v > 0]
    if log is None:
        log = bool(pos) and min(pos) > 0 and max(pos) / min(pos) > 100 and min(vals) > 0
    sc = Scale(min(vals, default=0.0) if log else min(0.0, min(vals, default=0.0)),
               max(vals, default=1.0), left, width - 24, log, whole)
    row_h = 26
    top = 8
    height = top + row_h * len(rows) + 44
    body: list[str] = []
    _x_axis(body, sc, top, top + row_h * len(rows), fmt, title + (" (log scale)" if sc.log else ""))
    for i, (label, s, colour) in enumerate(rows):
        y = top + i * row_h + row_h / 2
        tip = (f"{label}: n={s['n']}, min {fmt(s['min'])}, median {fmt(s['med'])}, "
               f"mean {fmt(s['mean'])}, max {fmt(s['max'])}")
        body.append(f'<g class="box"><title>{escape(tip)}</title>')
        body.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">'
                    f'{escape(_short(label, 18))}</text>')
        body.append(f'<line x1="{sc(s["lo"]):.1f}" x2="{sc(s["hi"]):.1f}" y1="{y:.1f}" '
                    f'y2="{y:.1f}" stroke="#555"/>')
        for v in (s["lo"], s["hi"]):
            body.append(f'<line x1="{sc(v):.1f}" x2="{sc(v):.1f}" y1="{y - 6:.1f}" '
                        f'y2="{y + 6:.1f}" stroke="#555"/>')
        x1, x3 = sc(s["q1"]), sc(s["q3"])
        body.append(f'<rect x="{x1:.1f}" y="{y - 9:.1f}" width="{max(x3 - x1, 1.5):.1f}" '
                    f'height="18" fill="{colour}" stroke="#333"/>')
        body.append(f'<line x1="{sc(s["med"]):.1f}" x2="{sc(s["med"]):.1f}" y1="{y - 9:.1f}" '
                    f'y2="{y + 9:.1f}" stroke="#000" stroke-width="2"/>')
        body.append(f'<path d="M{sc(s["mean"]):.1f},{y - 4:.1f}l4,4l-4,4l-4,-4z" fill="#fff" '
                    'stroke="#000"/>')
        for v in s.get("outliers", ()):
            body.append(f'<circle cx="{sc(v):.1f}" cy="{y:.1f}" r="2.5" fill="none" '
                        'stroke="#555"/>')
        body.append("</g>")
    return _svg(height, body, title, width)


def steps(series: Sequence[tuple[str, str, Sequence[tuple[float, float]]]], t_end: float,
          y_title: str, x_title: str, height: int = 240) -> str:
    """Step curves ``(label, colour, [(t, value)])`` over ``[0, t_end]``, the legend above."""
    top, bottom = 34, height - 44
    ys = [v for _, _, pts in series for _, v in pts] or [1.0]
    ysc = Scale(0.0, max(max(ys), 1.0), bottom, top)
    xsc = Scale(0.0, max(t_end, 1e-6), LEFT, WIDTH - 20)
    body: list[str] = []
    _x_axis(body, xsc, top, bottom, _secs, x_title)
    for v in ysc.ticks:
        body.append(f'<line x1="{LEFT}" x2="{WIDTH - 20}" y1="{ysc(v):.1f}" y2="{ysc(v):.1f}" '
                    'stroke="#eee"/>')
        body.append(f'<text x="{LEFT - 8}" y="{ysc(v) + 4:.1f}" text-anchor="end">'
                    f'{_num(v)}</text>')
    body.append(f'<text x="14" y="{(top + bottom) / 2:.1f}" text-anchor="middle" '
                f'transform="rotate(-90 14 {(top + bottom) / 2:.1f})" fill="#444">'
                f'{escape(y_title)}</text>')
    x = LEFT
    for label, colour, _pts in series:     # the legend: above the plot, never on a line
        body.append(f'<rect x="{x}" y="8" width="16" height="4" fill="{colour}"/>'
                    f'<text x="{x + 22}" y="15">{escape(label)}</text>')
        x += 40 + 7 * len(label)
    for label, colour, pts in series:
        if not pts:
            continue
        d = [f"M{xsc(max(pts[0][0], 0.0)):.1f},{ysc(pts[0][1]):.1f}"]
        for (_t, v), nxt in zip(pts, list(pts[1:]) + [(t_end, pts[-1][1])]):
            d.append(f"H{xsc(min(max(nxt[0], 0.0), xsc.hi)):.1f}")
            if nxt[1] != v:
                d.append(f"V{ysc(nxt[1]):.1f}")
        body.append(f'<path class="series" d="{"".join(d)}" fill="none" stroke="{colour}" '
                    f'stroke-width="2"><title>{escape(label)}</title></path>')
    return _svg(height, body, y_title)


def timeline(lanes: Sequence[str], bars: Sequence[tuple[int, float, float, str, str, str]],
             t_end: float, x_title: str) -> str:
    """One row per slot; a bar ``(lane, start, end, colour, outline, hover text)`` per task."""
    row_h = 16 if len(lanes) <= 40 else 9
    top, height = 8, 8 + row_h * len(lanes) + 44
    xsc = Scale(0.0, max(t_end, 1e-6), LEFT, WIDTH - 20)
    body: list[str] = []
    bottom = top + row_h * len(lanes)
    _x_axis(body, xsc, top, bottom, _secs, x_title)
    step = max(1, math.ceil(len(lanes) / 60))          # at most ~60 lane labels
    for i, lane in enumerate(lanes):
        if i % step == 0:
            body.append(f'<text x="{LEFT - 8}" y="{top + i * row_h + row_h - 4}" '
                        f'text-anchor="end" font-size="{11 if row_h > 10 else 8}">'
                        f'{escape(_short(lane, 26))}</text>')
    for row, a, b, colour, outline, tip in bars:
        x0, x1 = xsc(a), xsc(b)
        body.append(f'<rect class="bar" x="{x0:.1f}" y="{top + row * row_h + 1}" '
                    f'width="{max(x1 - x0, 0.8):.1f}" height="{row_h - 2}" fill="{colour}" '
                    f'stroke="{outline}" stroke-width="0.5"><title>{escape(tip)}</title></rect>')
    return _svg(height, body, "timeline of the slots")


def _short(s: str, n: int) -> str:
    return s if len(s) <= n else s[:n - 1] + "…"


def _num(v: float) -> str:
    return f"{v:g}" if abs(v) < 1e6 else f"{v:.3g}"


def _secs(v: float) -> str:
    if v >= 3600:
        return f"{v / 3600:g} h"
    if v >= 120:
        return f"{v / 60:g} min"
    return f"{v:g} s"
