"""Figures and the animation of the NMMB-MONARCH example (matplotlib, Agg).

    python3 figures.py day DIAG PNG DAY          one day's AOD map
    python3 figures.py anim GIF DIAG [DIAG ...]   animated GIF over the days

Both the BASH driver and the taskflow port call these functions, so their
figures are the same bytes (same matplotlib and pillow, fixed metadata).
"""
from __future__ import annotations

import sys

import numpy as np

DOMAIN = (-30.0, 60.0, 0.0, 60.0)   # lon0, lon1, lat0, lat1 (the model's grid)
VMAX = 1.5


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


def _figure(aod: np.ndarray, title: str):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6.4, 4.2), dpi=80)
    im = ax.imshow(aod, origin="lower", extent=DOMAIN, vmin=0.0, vmax=VMAX, cmap="YlOrBr",
                   interpolation="nearest", aspect="auto")
    ax.set_xlabel("longitude (deg E)")
    ax.set_ylabel("latitude (deg N)")
    title_artist = ax.set_title(title)
    fig.colorbar(im, ax=ax, label="dust AOD 550 nm")
    fig.tight_layout()
    return fig, ax, im, title_artist


def plot_day(diag: str, png: str, day: int) -> None:
    import matplotlib.pyplot as plt
    f = read_fields(diag)
    fig, *_ = _figure(f["aod"], f"Dust AOD, day {int(day)} mean (mean {f['mean_aod']:.3f})")
    fig.savefig(png, metadata={"Software": None})
    plt.close(fig)


def animate(gif: str, diags: list) -> None:
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation, PillowWriter
    fields = [read_fields(d) for d in diags]
    frames = []
    for f in fields:                       # two frames a day: daily mean, then end of day
        frames.append((f["aod"], "mean"))
        frames.append((f["aod_end"], "end"))
    fig, ax, im, title = _figure(frames[0][0], "")

    def draw(k: int):
        a, what = frames[k]
        im.set_data(a)
        title.set_text(f"Dust AOD, day {k // 2 + 1} {what}")
        return im, title

    anim = FuncAnimation(fig, draw, frames=len(frames), blit=False)
    anim.save(gif, writer=PillowWriter(fps=2))
    plt.close(fig)


def main(argv: list) -> int:
    if len(argv) == 4 and argv[0] == "day":
        plot_day(argv[1], argv[2], int(argv[3]))
        return 0
    if len(argv) >= 3 and argv[0] == "anim":
        animate(argv[1], argv[2:])
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
