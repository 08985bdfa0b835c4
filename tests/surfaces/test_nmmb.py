"""The NMMB-MONARCH example: the Fortran programs, the BASH original and the
taskflow port on a small config, and every output file compared.

The build needs gfortran, mpif90 and mpirun (.ci/run installs Debian's
gfortran and Open MPI); without them the module is skipped.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from support.paths import ROOT
EX = os.path.join(ROOT, "examples", "nmmb_monarch")
SMALL = os.path.join(EX, "config", "small.nml")
FIXED = ("smmount", "landuse", "deeptemperature", "roughness", "albedo", "snowalbedo", "vegfrac",
         "soiltype", "stdh", "dust_source", "seaice", "gfdlco2", "lookup_aerosol")
DAYS = 3
NOT_OUTPUTS = {"bash_times.tsv"}       # the BASH driver's timing record

missing = [t for t in ("gfortran", "mpif90", "mpirun", "make") if shutil.which(t) is None]
pytestmark = pytest.mark.skipif(bool(missing), reason=f"build tools missing: {missing} "
                                "(.ci/run installs gfortran and openmpi)")


def mpi_env(**extra) -> dict:
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", NEMS_NODES="1", NEMS_CUS_PER_NODE="2")
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> str:
    """The programs built from the sources into a scratch bin/ (the tree is not touched)."""
    d = tmp_path_factory.mktemp("nmmb_build")
    bindir, objdir = str(d / "bin"), str(d / "build")
    r = subprocess.run(["make", "-C", EX, f"BIN={bindir}", f"OBJ={objdir}"],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    return bindir


@pytest.fixture(scope="module")
def bash_run(built, tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("nmmb") / "bash")
    r = subprocess.run(["bash", os.path.join(EX, "nmmb.sh"), SMALL, out],
                       capture_output=True, text=True, env=mpi_env(NMMB_BIN=built,
                                                                   PYTHON=sys.executable))
    assert r.returncode == 0, r.stdout + r.stderr
    return out


@pytest.fixture(scope="module")
def taskflow_run(built, tmp_path_factory):
    base = tmp_path_factory.mktemp("nmmb_tf")
    out = str(base / "taskflow")
    r = subprocess.run([sys.executable, "-m", "taskflow.cli", "run", "--workers", "2",
                        "--run-dir", str(base / "runs"), os.path.join(EX, "workflow.py"),
                        SMALL, out],
                       capture_output=True, text=True, cwd=str(base),
                       env=mpi_env(NMMB_BIN=built, NMMB_TIMES=str(base / "times.tsv")))
    return out, r, str(base / "times.tsv")


def outputs(root: str) -> list[str]:
    found = []
    for d, _, files in os.walk(root):
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), root)
            if rel not in NOT_OUTPUTS:
                found.append(rel)
    return sorted(found)


def expected_outputs() -> list[str]:
    names = ["namelist.nml", "seamask.txt", "gfs.txt", "restart_00.txt",
             "figures/aod.gif"] + [f"fixed/{p}.txt" for p in FIXED]
    for d in range(1, DAYS + 1):
        names += [f"day{d:02d}/{f}" for f in ("degrib.txt", "winds.txt", "soil.txt", "input.txt",
                                               "history.txt", "restart.txt", "regrid.txt",
                                               "diag.txt", "umo_model.out", "umo_model.err")]
        names.append(f"figures/aod_day{d:02d}.png")
    return sorted(names)


def stats(path: str) -> dict:
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith("STAT"):
                _, k, v = line.split()
                out[k] = float(v)
    return out


# ---- the programs and the BASH original -------------------------------------

def test_build_makes_every_program(built):
    progs = {"init", "umo_model", "degrib", "prep_winds", "prep_soil", "prep_bc", "post_regrid",
             "post_diag", *FIXED}
    assert progs <= set(os.listdir(built))


def test_bash_driver_writes_every_output(bash_run):
    assert outputs(bash_run) == expected_outputs()
    for rel in expected_outputs():
        if not rel.endswith(".err"):
            assert os.path.getsize(os.path.join(bash_run, rel)) > 0, rel
    with open(os.path.join(bash_run, "bash_times.tsv")) as f:
        rows = [line.split("\t") for line in f.read().splitlines()[1:]]
    # init, 13 fixed, 4 variable + model + 2 post per day, a figure a day and the animation
    assert len(rows) == 1 + len(FIXED) + DAYS * 7 + DAYS + 1


def test_namelist_is_completed_with_defaults(bash_run):
    text = open(os.path.join(bash_run, "namelist.nml")).read()
    assert "nx = 48" in text and "ny = 32" in text and "days = 3" in text and "nhist = 4" in text


def test_figures_share_a_colour_scale_fitted_to_the_data(bash_run):
    """Not a fixed 0-1.5 on fields averaging 0.02-0.06: 0 to the run's 99th percentile,
    the same for every day and frame, on figures 1,024 px wide."""
    np = pytest.importorskip("numpy")
    Image = pytest.importorskip("PIL.Image")
    import importlib.util
    spec = importlib.util.spec_from_file_location("nmmb_figures", os.path.join(EX, "figures.py"))
    fig = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fig)
    diags = [os.path.join(bash_run, f"day{d:02d}", "diag.txt") for d in range(1, DAYS + 1)]
    values = np.concatenate([fig.read_fields(p)[k].ravel() for p in diags
                             for k in ("aod", "aod_end")])
    top = fig.scale(diags)
    p99 = float(np.percentile(values, 99))
    assert p99 <= top <= p99 * 1.1 + 1e-12 and top < 1.0
    assert float(values.mean()) > top / 20          # the mean is not lost at the pale end
    for d in range(1, DAYS + 1):
        assert Image.open(os.path.join(bash_run, "figures", f"aod_day{d:02d}.png")).size == \
            (1024, 640)
    gif = Image.open(os.path.join(bash_run, "figures", "aod.gif"))
    assert gif.size == (1024, 640) and gif.n_frames == 2 * DAYS


def test_days_chain_through_the_restart(bash_run):
    # each day starts from the previous day's end state: day N's restart is the
    # last snapshot of its history, and dust accumulates from day to day
    loads = [stats(os.path.join(bash_run, f"day{d:02d}", "diag.txt"))["mean_load_g_per_m2"]
             for d in range(1, DAYS + 1)]
    assert loads[0] > 0 and loads[0] < loads[1] < loads[2]
    for d in range(1, DAYS + 1):
        log = open(os.path.join(bash_run, f"day{d:02d}", "umo_model.out")).read()
        assert f"day {d}," in log and "restart written" in log
        assert "running on 2 ranks" in open(os.path.join(bash_run, f"day{d:02d}",
                                                         "umo_model.err")).read()


@pytest.mark.parametrize("ranks", [1, 3])
def test_model_output_does_not_depend_on_rank_count(built, bash_run, tmp_path, ranks):
    d = os.path.join(bash_run, "day02")
    hist, rst = str(tmp_path / "history.txt"), str(tmp_path / "restart.txt")
    argv = ["mpirun", "-n", str(ranks), os.path.join(built, "umo_model"),
            os.path.join(bash_run, "namelist.nml"), "2", os.path.join(bash_run, "seamask.txt"),
            os.path.join(bash_run, "fixed", "dust_source.txt"),
            os.path.join(bash_run, "fixed", "roughness.txt"), os.path.join(d, "input.txt"),
            os.path.join(bash_run, "day01", "restart.txt"), hist, rst]
    r = subprocess.run(argv, capture_output=True, text=True, env=mpi_env())
    assert r.returncode == 0, r.stderr
    assert open(hist, "rb").read() == open(os.path.join(d, "history.txt"), "rb").read()
    assert open(rst, "rb").read() == open(os.path.join(d, "restart.txt"), "rb").read()
    assert r.stdout == open(os.path.join(d, "umo_model.out")).read()


def test_programs_reject_bad_arguments(built, bash_run, tmp_path):
    r = subprocess.run([os.path.join(built, "smmount"), "only-one-arg"], capture_output=True,
                       text=True)
    assert r.returncode != 0 and "usage: smmount NAMELIST SEAMASK OUT" in r.stderr
    r = subprocess.run([os.path.join(built, "landuse"), os.path.join(bash_run, "namelist.nml"),
                        str(tmp_path / "nope.txt"), str(tmp_path / "out.txt")],
                       capture_output=True, text=True)
    assert r.returncode != 0 and "cannot read" in r.stderr and "nope.txt" in r.stderr
    assert not (tmp_path / "out.txt").exists()


def test_programs_do_not_depend_on_the_working_directory(built, bash_run, tmp_path):
    out = tmp_path / "elsewhere" / "roughness.txt"
    out.parent.mkdir()
    r = subprocess.run([os.path.join(built, "roughness"), os.path.join(bash_run, "namelist.nml"),
                        os.path.join(bash_run, "seamask.txt"), str(out)], cwd="/",
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes() == open(os.path.join(bash_run, "fixed", "roughness.txt"), "rb").read()


# ---- the taskflow port ----------------------------------------------------------

def test_taskflow_port_succeeds(taskflow_run):
    out, r, _ = taskflow_run
    assert r.returncode == 0, r.stdout + r.stderr
    ntasks = 1 + len(FIXED) + DAYS * 8 + 1
    assert f"{ntasks} tasks, {ntasks} done, 0 failed" in r.stderr
    assert f"animation: {out}/figures/aod.gif" in r.stdout


def test_taskflow_port_gives_the_same_files_byte_for_byte(bash_run, taskflow_run):
    out, r, _ = taskflow_run
    assert r.returncode == 0, r.stderr
    assert outputs(out) == outputs(bash_run) == expected_outputs()
    differ = [rel for rel in expected_outputs()
              if open(os.path.join(out, rel), "rb").read()
              != open(os.path.join(bash_run, rel), "rb").read()]
    assert differ == []


def test_taskflow_port_overlaps_independent_work(taskflow_run):
    # behaviour, not timing: of the 25 independent-enough Fixed and Variable
    # programs, some two were running at the same time on the two slots
    _, r, times = taskflow_run
    assert r.returncode == 0, r.stderr
    rows = [line.split("\t") for line in open(times).read().splitlines()[1:]]
    assert len([1 for row in rows if row[1] in FIXED]) == len(FIXED)
    early = sorted((float(t0), float(t1)) for _, name, t0, t1 in rows
                   if name in FIXED or name in ("degrib", "prep_winds", "prep_soil", "prep_bc"))
    assert len(early) == len(FIXED) + 4 * DAYS
    assert any(b0 < a1 for (a0, a1), (b0, b1) in zip(early, early[1:]))
    models = sorted((float(t0), float(t1)) for _, name, t0, t1 in rows if name == "umo_model")
    assert len(models) == DAYS
    assert all(b0 >= a1 for (a0, a1), (b0, b1) in zip(models, models[1:]))   # chained days


# ---- the web monitor on the port's run --------------------------------------------

def test_monitor_shows_the_run_at_its_start_middle_and_end(built, tmp_path):
    """`taskflow run --monitor` on the NMMB port, seen in headless Chromium three times.

    The model runs longer than in the demo (more steps), so its days are seen
    running; screenshots are kept under test-artifacts/ (nmmb-start, -middle, -end).
    """
    import re
    import threading

    from support import browser
    cfg = tmp_path / "monitor.nml"
    cfg.write_text(open(os.path.join(EX, "config", "default.nml")).read()
                   .replace("model_steps = 1440", "model_steps = 5000"))
    proc = subprocess.Popen(
        [sys.executable, "-m", "taskflow.cli", "run", "--workers", "2", "--monitor",
         "--run-dir", str(tmp_path / "runs"), os.path.join(EX, "workflow.py"), str(cfg),
         str(tmp_path / "out")], cwd=str(tmp_path), stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True, env=mpi_env(NMMB_BIN=built))
    err: list[str] = []
    url = threading.Event()
    found: list[str] = []

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            err.append(line)
            m = re.search(r"taskflow monitor: (http://\S+)", line)
            if m and not found:
                found.append(m.group(1))
                url.set()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert url.wait(60), "".join(err)
        with browser.page() as pg:
            pg.goto(found[0])
            # start: the graph is laid out, with arrows, and not everything is done yet
            pg.wait_for_selector("#dag g.task[data-state]")
            pg.screenshot(path=browser.artifact("nmmb-start.png"), full_page=True)
            assert len(pg.query_selector_all("#dag g.task")) == 39
            assert len(pg.query_selector_all("#dag g.edge polygon")) >= 38     # arrow heads
            assert pg.inner_text("#count-total") == "total: 39"
            assert pg.inner_text("#count-DONE") != "done: 39"
            assert pg.query_selector("#nodes .node") is not None
            # middle: a day of the model running, on both slots (2 MPI ranks)
            # (one look at the graph and the Gantt chart together: a model day is short)
            pg.wait_for_function("""[...document.querySelectorAll('#dag g.task[data-state="RUNNING"]')]
                .some(g => g.querySelector('text').textContent === 'umo_model') &&
                [...document.querySelectorAll('#gantt rect.bar[data-state="RUNNING"]')]
                .filter(r => r.textContent.includes('umo_model')).length >= 2""", timeout=90000)
            pg.screenshot(path=browser.artifact("nmmb-middle.png"), full_page=True)
            pg.wait_for_selector("#nodes svg polyline.series-cpu", state="attached", timeout=30000)
            assert pg.query_selector("#nodes svg polyline.series-mem") is not None
            # end: every task done, every bar drawn (the model on two slots a day)
            pg.wait_for_selector('body[data-state="finished"]', timeout=120000)
            pg.wait_for_function("document.querySelector('#count-DONE').innerText == 'done: 39'")
            pg.screenshot(path=browser.artifact("nmmb-end.png"), full_page=True)
            states = {g.get_attribute("data-state") for g in pg.query_selector_all("#dag g.task")}
            assert states == {"DONE"}
            assert len(pg.query_selector_all("#gantt rect.bar")) == 39 + 3
            assert pg.errors == []
        assert proc.wait(120) == 0, "".join(err)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    for name in ("nmmb-start.png", "nmmb-middle.png", "nmmb-end.png"):
        assert browser.is_png(os.path.join(browser.ARTIFACTS, name))
