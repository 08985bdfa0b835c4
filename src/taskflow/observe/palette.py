"""Colours for task names that stay apart at any count.

A fixed list of 12 colours gives two of 23 task names the same fill. Here
the colours are chosen in OKLab, a space where Euclidean distance follows
perceived difference: candidates are light, in-gamut sRGB colours (black
text stays readable on them), and each next colour is the candidate
farthest from every colour chosen so far (the greedy max-min choice the
Glasbey palettes use). Names get colours in the order of a hash of the
name, so a name keeps its colour from run to run while the set of names
does not change, and the first k colours are always the k most distinct.

(colorcet's Glasbey lists would do, but importing colorcet costs 0.6 s and
loads matplotlib, which ``taskflow graph`` and the monitor do not need.)
"""
from __future__ import annotations

import functools
import hashlib
from typing import Iterable

# lightness band of the fills: light enough for black text, dark enough to tell apart
# The colour of each task state, the same in the monitor, the report and the pictures. They
# follow the terminal's progress bars (console/bars.py): running cyan, failed red, done
# green (rich's finished bar).
STATE_COLOURS: dict[str, str] = {
    "SUBMITTED": "#e0e0e0", "READY": "#fff3b0", "DISPATCHED": "#9ecae1", "RUNNING": "#22a7c9",
    "DONE": "#74c476", "FAILED": "#de2d26", "CANCELLED": "#bdbdbd", "INTERRUPTED": "#fd8d3c",
}

_L_LEVELS = (0.68, 0.74, 0.80, 0.86, 0.92)
_AB_STEP = 0.02
_AB_MAX = 0.20


def _oklab_to_srgb(L: float, a: float, b: float) -> tuple[float, float, float] | None:
    """OKLab -> sRGB in [0, 1] (None when out of gamut). Björn Ottosson's matrices."""
    l_ = (L + 0.3963377774 * a + 0.2158037573 * b) ** 3
    m_ = (L - 0.1055613458 * a - 0.0638541728 * b) ** 3
    s_ = (L - 0.0894841775 * a - 1.2914855480 * b) ** 3
    lin = (4.0767416621 * l_ - 3.3077115913 * m_ + 0.2309699292 * s_,
           -1.2684380046 * l_ + 2.6097574011 * m_ - 0.3413193965 * s_,
           -0.0041960863 * l_ - 0.7034186147 * m_ + 1.7076147010 * s_)
    out = []
    for c in lin:
        if c < -1e-6 or c > 1 + 1e-6:
            return None
        c = min(max(c, 0.0), 1.0)
        out.append(12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055)
    return out[0], out[1], out[2]


@functools.lru_cache(maxsize=1)
def _candidates() -> list[tuple[tuple[float, float, float], str]]:
    """In-gamut OKLab points of the lightness band, with their hex colour."""
    out = []
    n = int(round(_AB_MAX / _AB_STEP))
    for L in _L_LEVELS:
        for i in range(-n, n + 1):
            for j in range(-n, n + 1):
                a, b = i * _AB_STEP, j * _AB_STEP
                rgb = _oklab_to_srgb(L, a, b)
                if rgb is not None:
                    out.append(((L, a, b), "#%02x%02x%02x" % tuple(round(c * 255) for c in rgb)))
    return out


@functools.lru_cache(maxsize=8)
def distinct(n: int) -> tuple[str, ...]:
    """``n`` colours, each the farthest (in OKLab) from the ones before it."""
    cands = _candidates()
    if n <= 0:
        return ()
    # start from a saturated mid colour so the first few are lively, not grey
    first = max(range(len(cands)), key=lambda k: (cands[k][0][1] ** 2 + cands[k][0][2] ** 2,
                                                  -abs(cands[k][0][0] - 0.80)))
    chosen = [first]
    best = [_dist2(c[0], cands[first][0]) for c in cands]
    while len(chosen) < min(n, len(cands)):
        k = max(range(len(cands)), key=best.__getitem__)
        chosen.append(k)
        p = cands[k][0]
        for m, (q, _) in enumerate(cands):
            d = _dist2(q, p)
            if d < best[m]:
                best[m] = d
    hexes = [cands[k][1] for k in chosen]
    while len(hexes) < n:           # more names than candidates: reuse, in the same order
        hexes.append(hexes[len(hexes) % len(chosen)])
    return tuple(hexes)


def _dist2(p: tuple[float, float, float], q: tuple[float, float, float]) -> float:
    return (p[0] - q[0]) ** 2 + (p[1] - q[1]) ** 2 + (p[2] - q[2]) ** 2


def _key(name: str) -> bytes:
    return hashlib.blake2b(name.encode("utf-8", "surrogatepass"), digest_size=8).digest()


def colours(names: Iterable[str]) -> dict[str, str]:
    """A fill colour per distinct name: distinct names get distinct colours."""
    uniq = sorted(set(names), key=lambda s: (_key(s), s))
    return dict(zip(uniq, distinct(len(uniq))))


def text_colour(fill: str) -> str:
    """Black or white, whichever reads better on ``fill`` (#rrggbb)."""
    r, g, b = (int(fill[i:i + 2], 16) / 255 for i in (1, 3, 5))
    return "#000000" if 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.45 else "#ffffff"


def oklab(hex_colour: str) -> tuple[float, float, float]:
    """The OKLab coordinates of an sRGB ``#rrggbb`` (tests measure distances with it)."""
    lin = []
    for i in (1, 3, 5):
        c = int(hex_colour[i:i + 2], 16) / 255
        lin.append(c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4)
    r, g, b = lin
    l_ = (0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b) ** (1 / 3)
    m_ = (0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b) ** (1 / 3)
    s_ = (0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b) ** (1 / 3)
    return (0.2104542553 * l_ + 0.7936177850 * m_ - 0.0040720403 * s_,
            1.9779984951 * l_ - 2.4285922050 * m_ + 0.4505937099 * s_,
            0.0259040371 * l_ + 0.7827717662 * m_ - 0.8086757660 * s_)
