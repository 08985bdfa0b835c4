"""NMMB-MONARCH, the taskflow port of nmmb.sh.

    taskflow run examples/nmmb_monarch/workflow.py [CONFIG] [OUTDIR]

CONFIG defaults to config/default.nml, OUTDIR to ./nmmb_run_taskflow. The
binaries are the same as nmmb.sh runs (build them with `make -C
examples/nmmb_monarch`): every Fortran program is a @binary task whose
FILE_IN / FILE_OUT parameters give the dependency graph, the UMO model is an
@mpi task on $NEMS_NODES x $NEMS_CUS_PER_NODE processes (defaults 1 and 2)
whose log goes to FILE_OUT_STDOUT / FILE_OUT_STDERR stream parameters, each
day's model run reads the restart file the previous day's wrote, and the
figures are Python tasks. Nothing in the script waits until the end: the
13 Fixed programs run side by side, every day's Variable step runs as soon
as its inputs exist, and post-processing fills the slots the model leaves
free (the model has priority: it is the critical path). The figures share
one colour scale from every day's values, so they run after the last day.

NMMB_TIMES=path writes each task's start and end (for benchmarks/nmmb_bench.py).
"""
from __future__ import annotations

import os
import re
import sys

from taskflow import (COLLECTION_FILE_IN, FILE_IN, FILE_OUT, FILE_OUT_STDERR, FILE_OUT_STDOUT,
                      barrier, binary, mpi, task)

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("NMMB_BIN", os.path.join(HERE, "bin"))
FIGURES_PY = os.path.join(HERE, "figures.py")

FIXED = ("smmount", "landuse", "deeptemperature", "roughness", "albedo", "snowalbedo", "vegfrac",
         "soiltype", "stdh", "dust_source", "seaice", "gfdlco2", "lookup_aerosol")

NEMS_NODES = int(os.environ.get("NEMS_NODES", "1"))
NEMS_CUS_PER_NODE = int(os.environ.get("NEMS_CUS_PER_NODE", "2"))
NEMS_PROCESSES = NEMS_NODES * NEMS_CUS_PER_NODE


def exe(name: str) -> str:
    return os.path.join(BIN, name)


# ---- 1. Initialization ------------------------------------------------------
@binary(binary=exe("init"))
@task(config=FILE_IN, namelist=FILE_OUT, seamask=FILE_OUT, gfs=FILE_OUT, restart0=FILE_OUT)
def init(config, namelist, seamask, gfs, restart0):
    """Complete namelist, land-sea mask, the days' analysis, cold start."""


# ---- 2. Fixed: one task per program, all independent ------------------------
def fixed_task(name: str):
    @binary(binary=exe(name))
    @task(namelist=FILE_IN, seamask=FILE_IN, out=FILE_OUT)
    def fixed(namelist, seamask, out):
        pass
    fixed.spec.name = name            # the name the progress line, logs and journal show
    return fixed


FIXED_TASKS = {name: fixed_task(name) for name in FIXED}


# ---- 3. Variable, per day ------------------------------------------------------
@binary(binary=exe("degrib"))
@task(namelist=FILE_IN, gfs=FILE_IN, out=FILE_OUT)
def degrib(namelist, gfs, day, out):
    """The day's records of the analysis, quality-controlled."""


@binary(binary=exe("prep_winds"))
@task(namelist=FILE_IN, degribbed=FILE_IN, topography=FILE_IN, out=FILE_OUT)
def prep_winds(namelist, degribbed, topography, out):
    """Winds on the model grid."""


@binary(binary=exe("prep_soil"))
@task(namelist=FILE_IN, degribbed=FILE_IN, soiltype=FILE_IN, vegfrac=FILE_IN, out=FILE_OUT)
def prep_soil(namelist, degribbed, soiltype, vegfrac, out):
    """Precipitation and soil moisture on the model grid."""


@binary(binary=exe("prep_bc"))
@task(namelist=FILE_IN, winds=FILE_IN, soil=FILE_IN, out=FILE_OUT)
def prep_bc(namelist, winds, soil, out):
    """The model's input file for the day."""


# ---- 4. UMO model, per day: MPI ------------------------------------------------
@mpi(runner="mpirun", binary=exe("umo_model"), processes=NEMS_PROCESSES,
     processes_per_node=NEMS_CUS_PER_NODE, flags=os.environ.get("NEMS_MPI_FLAGS") or None)
@task(priority=True,                   # the critical path: first in line for the slots
      namelist=FILE_IN, seamask=FILE_IN, source=FILE_IN, roughness=FILE_IN, model_input=FILE_IN,
      restart_in=FILE_IN, history=FILE_OUT, restart_out=FILE_OUT,
      log=FILE_OUT_STDOUT, err=FILE_OUT_STDERR)
def umo_model(namelist, day, seamask, source, roughness, model_input, restart_in, history,
              restart_out, log, err):
    """One simulated day of dust transport; restarts from the previous day."""


# ---- 5. Post-process, per day -------------------------------------------------
@binary(binary=exe("post_regrid"))
@task(namelist=FILE_IN, history=FILE_IN, out=FILE_OUT)
def post_regrid(namelist, history, out):
    """Daily mean and end-of-day load on the output grid."""


@binary(binary=exe("post_diag"))
@task(namelist=FILE_IN, regrid=FILE_IN, lookup=FILE_IN, out=FILE_OUT)
def post_diag(namelist, regrid, lookup, out):
    """Column load, AOD and domain statistics."""


# ---- 6. Figures: Python tasks --------------------------------------------------
def _figures_module(path: str):
    import importlib.util
    spec = importlib.util.spec_from_file_location("nmmb_figures", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@task(diag=FILE_IN, png=FILE_OUT, diags=COLLECTION_FILE_IN)
def plot_day(figures_py, diag, png, day, diags):
    """Day ``day``'s map on the colour scale of the whole run (every day's ``diags``)."""
    _figures_module(figures_py).plot_day(diag, png, day, list(diags))


@task(gif=FILE_OUT, diags=COLLECTION_FILE_IN)
def animate(figures_py, gif, diags):
    _figures_module(figures_py).animate(gif, list(diags))


# ---- the driver ------------------------------------------------------------------
def config_days(path: str) -> int:
    """`days` of the &nmmb namelist (init fills in the same default, 3)."""
    with open(path) as f:
        for line in f:
            m = re.match(r"\s*days\s*=\s*(\d+)", line.split("!")[0])
            if m:
                return int(m.group(1))
    return 3


def main(config: str, out: str) -> dict:
    config, out = os.path.abspath(config), os.path.abspath(out)
    for sub in ("fixed", "figures"):
        os.makedirs(os.path.join(out, sub), exist_ok=True)
    days = config_days(config)
    nml, seamask = f"{out}/namelist.nml", f"{out}/seamask.txt"
    gfs, restart = f"{out}/gfs.txt", f"{out}/restart_00.txt"

    init(config, nml, seamask, gfs, restart)

    fx = {name: f"{out}/fixed/{name}.txt" for name in FIXED}
    for name in FIXED:
        FIXED_TASKS[name](nml, seamask, fx[name])

    diags = []
    for d in range(1, days + 1):
        day = f"{out}/day{d:02d}"
        os.makedirs(day, exist_ok=True)
        degrib(nml, gfs, d, f"{day}/degrib.txt")
        prep_winds(nml, f"{day}/degrib.txt", fx["smmount"], f"{day}/winds.txt")
        prep_soil(nml, f"{day}/degrib.txt", fx["soiltype"], fx["vegfrac"], f"{day}/soil.txt")
        prep_bc(nml, f"{day}/winds.txt", f"{day}/soil.txt", f"{day}/input.txt")
        umo_model(nml, d, seamask, fx["dust_source"], fx["roughness"], f"{day}/input.txt",
                  restart, f"{day}/history.txt", f"{day}/restart.txt",
                  f"{day}/umo_model.out", f"{day}/umo_model.err")
        restart = f"{day}/restart.txt"                 # the next day starts from here
        post_regrid(nml, f"{day}/history.txt", f"{day}/regrid.txt")
        post_diag(nml, f"{day}/regrid.txt", fx["lookup_aerosol"], f"{day}/diag.txt")
        diags.append(f"{day}/diag.txt")
    # the figures share one colour scale, from every day's values: they wait for the last day
    for d, diag in enumerate(diags, 1):
        plot_day(FIGURES_PY, diag, f"{out}/figures/aod_day{d:02d}.png", d, diags)
    animate(FIGURES_PY, f"{out}/figures/aod.gif", diags)
    barrier()                                          # every file at its path from here on
    return {"figures": [f"{out}/figures/aod_day{d:02d}.png" for d in range(1, days + 1)],
            "animation": f"{out}/figures/aod.gif",
            "logs": [f"{out}/day{d:02d}/umo_model.{s}" for d in range(1, days + 1)
                     for s in ("out", "err")]}


def record_times(path: str):
    """Subscribe to the runtime's events; return a function that writes the times."""
    import taskflow
    rt = taskflow.current_runtime()
    if rt is None:
        rt = taskflow.start()
    rows: list = []

    def on_events(events):
        for kind, _t, tid, name, node, extra in events:
            if kind == "done" and extra:
                rows.append((tid, name, extra[0], extra[1]))

    rt.bus.subscribe(on_events)

    def write():
        rt.bus.flush()
        with open(path, "w") as f:
            f.write("task\tname\tstart\tend\n")
            for tid, name, t0, t1 in sorted(rows):
                f.write(f"{tid}\t{name}\t{t0:.6f}\t{t1:.6f}\n")
    return write


if __name__ == "__main__":
    cfg = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "config", "default.nml")
    outdir = sys.argv[2] if len(sys.argv) > 2 else os.path.join(os.getcwd(), "nmmb_run_taskflow")
    if not os.access(exe("umo_model"), os.X_OK):
        sys.exit(f"workflow.py: {exe('umo_model')} is missing: run make -C {HERE}")
    times = os.environ.get("NMMB_TIMES")
    write_times = record_times(times) if times else None
    where = main(cfg, outdir)
    if write_times:
        write_times()
    print(f"NMMB-MONARCH: {len(where['figures'])} days simulated")
    print("  figures:   " + " ".join(where["figures"]))
    print("  animation: " + where["animation"])
    print("  model logs: " + os.path.join(os.path.abspath(outdir), "day*/umo_model.{out,err}"))
