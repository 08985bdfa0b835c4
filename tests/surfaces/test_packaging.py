"""The distribution: taskflow-hpc (import name taskflow), built, checked, installed clean.

On the package index ``taskflow`` is OpenStack's TaskFlow, another library with
the same import name, so this project is published as ``taskflow-hpc``. The
test builds the sdist and the wheel from a copy of the checkout, checks them
with twine, installs the wheel into a new virtual environment and runs a
small workflow with its ``taskflow`` command. The wheel is installed without
its dependencies (no download in a test); they are lent from this
interpreter's site-packages through a .pth file placed after the new
environment's own, so ``taskflow`` itself can only come from the wheel.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile

import pytest

import taskflow
from taskflow._version import DIST_NAME, __version__
from taskflow.errors import VersionMismatch
from taskflow.providers.handle import check_version

from support.paths import ROOT


def test_messages_name_the_distribution_to_install():
    assert DIST_NAME == "taskflow-hpc"
    with pytest.raises(VersionMismatch) as ei:
        check_version("node n1", "0.0.1", "/usr/bin/python3")
    assert f"/usr/bin/python3 -m pip install taskflow-hpc=={__version__}" in str(ei.value)


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    pytest.importorskip("build")
    src = tmp_path_factory.mktemp("checkout") / "taskflow"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "test-artifacts",
        ".taskflow", "run", "bin", "obj"))
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out),
                        str(src)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return out


def test_sdist_and_wheel_are_built_and_pass_twine_check(dist):
    names = sorted(os.listdir(dist))
    assert names == [f"taskflow_hpc-{__version__}-py3-none-any.whl",
                     f"taskflow_hpc-{__version__}.tar.gz"]
    r = subprocess.run([sys.executable, "-m", "twine", "check", "--strict",
                        *[str(dist / n) for n in names]], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.count("PASSED") == 2, r.stdout + r.stderr
    with zipfile.ZipFile(dist / names[0]) as whl:
        files = set(whl.namelist())
        meta = whl.read(f"taskflow_hpc-{__version__}.dist-info/METADATA").decode()
        entry = whl.read(f"taskflow_hpc-{__version__}.dist-info/entry_points.txt").decode()
    assert {"taskflow/monitor/static/monitor.js", "taskflow/monitor/static/monitor.css",
            "taskflow/__init__.py", "taskflow/agent/executor/loop.py"} <= files
    assert not any(f.startswith("tests/") for f in files)
    assert "Name: taskflow-hpc" in meta and "Requires-Dist: rich" in meta
    assert "taskflow = taskflow.cli:main" in entry


def test_the_wheel_installs_in_a_new_environment_and_runs_a_workflow(dist, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    whl = next(p for p in dist.iterdir() if p.suffix == ".whl")
    r = subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(whl)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    site = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True).stdout.strip()
    # the dependencies (cloudpickle, rich, ...) from this interpreter, after the venv's own
    with open(os.path.join(site, "zz_lent_dependencies.pth"), "w") as fh:
        fh.write(sysconfig.get_paths()["purelib"] + "\n")
    (tmp_path / "wf.py").write_text("from taskflow import task, wait_on\n\n"
                                    "@task(returns=int)\ndef square(x):\n    return x * x\n\n"
                                    "print('sum', sum(wait_on([square(i) for i in range(10)])))\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TASKFLOW_RUN_DIR")}
    r = subprocess.run([str(venv / "bin" / "taskflow"), "run", "-w", "2", "--run-dir",
                        str(tmp_path / "runs"), "wf.py"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "sum 285" in r.stdout and "10 tasks, 10 done, 0 failed" in r.stderr
    where = subprocess.run([str(py), "-c", "import taskflow, importlib.metadata as m; "
                            "print(taskflow.__file__); print(m.version('taskflow-hpc'))"],
                           cwd=tmp_path, env=env, capture_output=True, text=True)
    path, version = where.stdout.split()
    assert path.startswith(site) and version == __version__        # the wheel's, not the checkout
    assert not path.startswith(os.path.dirname(os.path.dirname(taskflow.__file__)))
