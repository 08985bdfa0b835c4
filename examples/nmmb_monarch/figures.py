"""Figures and the animation of the NMMB-MONARCH example (matplotlib, Agg).

    python3 figures.py day DIAG PNG DAY DIAG [DIAG ...]   one day's AOD map; the colour
                                                          scale from every day's DIAG
    python3 figures.py anim GIF DIAG [DIAG ...]            animated GIF over the days

The colour scale comes from the data: from 0 to the 99th percentile of every
AOD value of the run (each day's mean and end-of-day fields), the same for
every day's map and every frame of the animation so they compare (a fixed
0-1.5 washed out fields that average 0.02-0.06). Figures are 1,024 px wide.
Both the BASH driver and the taskflow port call these functions, so their
figures are the same bytes (same matplotlib and pillow, fixed metadata).
"""
from __future__ import annotations

import sys

import numpy as np

DOMAIN = (-30.0, 60.0, 0.0, 60.0)   # lon0, lon1, lat0, lat1 (the model's grid)
PERCENTILE = 99.0                   # the top of the colour scale, over the run's values
SIZE = (10.24, 6.4)                 # inches at DPI: 1,024 x 640 px
DPI = 100


def read_fields(path: str) -> dict:
    """The FIELD records (and STAT lines) of a grid file, as arrays (ny, nx)."""
    out: dict = {}
    with open(path) as f:
        tokens = f.read().split("\n")
    i = 0
    while i < len(tokens):
        line = tokens[i].split()
        i += 1
        if not line:
            continue
        if line[0] == "STAT":
            out[line[1]] = float(line[2])
        elif line[0] == "FIELD":
            name, nx, ny = line[1], int(line[2]), int(line[3])
            vals: list = []
            while len(vals) < nx * ny:
                vals.extend(float(v) for v in tokens[i].split())
                i += 1
            out[name] = np.array(vals).reshape(ny, nx)   # Fortran order: x fastest
    return out


def scale(diags: list) -> float:
    """The top of the colour scale: the PERCENTILE-th percentile of every AOD value of
    the run (two significant digits, so the colour bar reads well)."""
    values = []
    for d in diags:
        f = read_fields(d)
        values += [f[k].ravel() for k in ("aod", "aod_end") if k in f]
    top = float(np.percentile(np.concatenate(values), PERCENTILE)) if values else 0.0
    if top <= 0:
        return 1.0
    digits = 1 - int(np.floor(np.log10(top)))
    return float(np.ceil(top * 10 ** digits) / 10 ** digits)


def _figure(aod: np.ndarray, title: str, vmax: float):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=SIZE, dpi=DPI)
    im = ax.imshow(aod, origin="lower", extent=DOMAIN, vmin=0.0, vmax=vmax, cmap="YlOrBr",
                   interpolation="nearest", aspect="auto")
    ax.set_xlabel("longitude (deg E)")
    ax.set_ylabel("latitude (deg N)")
    title_artist = ax.set_title(title)
    fig.colorbar(im, ax=ax, label=f"dust AOD 550 nm (0 to the run's {PERCENTILE:g}th percentile)",
                 extend="max")
    fig.tight_layout()
    return fig, ax, im, title_artist


def plot_day(diag: str, png: str, day: int, diags: list) -> None:
    """Day ``day``'s map, on the colour scale of every day's ``diags``."""
    import matplotlib.pyplot as plt
    f = read_fields(diag)
    fig, *_ = _figure(f["aod"], f"Dust AOD, day {int(day)} mean (mean {f['mean_aod']:.3f})",
                      scale(list(diags)))
    fig.savefig(png, dpi=DPI, metadata={"Software": None})
    plt.close(fig)


def animate(gif: str, diags: list) -> None:
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation, PillowWriter
    fields = [read_fields(d) for d in diags]
    frames = []
    for f in fields:                       # two frames a day: daily mean, then end of day
        frames.append((f["aod"], "mean"))
        frames.append((f["aod_end"], "end"))
    fig, ax, im, title = _figure(frames[0][0], "", scale(list(diags)))

    def draw(k: int):
        a, what = frames[k]
        im.set_data(a)
        title.set_text(f"Dust AOD, day {k // 2 + 1} {what}")
        return im, title

    anim = FuncAnimation(fig, draw, frames=len(frames), blit=False)
    anim.save(gif, writer=PillowWriter(fps=2), dpi=DPI)
    plt.close(fig)


def main(argv: list) -> int:
    if len(argv) >= 5 and argv[0] == "day":
        plot_day(argv[1], argv[2], int(argv[3]), argv[4:])
        return 0
    if len(argv) >= 3 and argv[0] == "anim":
        animate(argv[1], argv[2:])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
