"""PyCOMPSs semantics of issue 29, each through ``taskflow run --compat pycompss``.

Every application under tests/compat/compat_apps/ prints ``RESULT <literal>``; the tests check
that literal, the files, the exit status and runcompss's closing line (the helpers of
test_compat_pycompss.py).
"""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time

from support.pycompss_apps import DASHES, journal, needs_mpi, ok, run_app


def test_declarations_pycompss_accepts(tmp_path):
    """Unknown @task keywords ignored, unknown decorator arguments warned as PyCOMPSs warns
    and ignored (from a @software JSON too), INOUT/OUT on immutables read and unchanged,
    @software on a declared @task, JSON returns "int", is_local, $PWD the launch
    directory (whatever PWD the caller's environment says)."""
    r = run_app("app_declarations.py", cwd=tmp_path, env={"PWD": "/"})
    out = ok(r)
    assert "WARNING: Unexpected argument: colour Found in @binary decorator." in r.stderr
    assert "WARNING: Unexpected argument: colour Found in @task decorator." in r.stderr
    assert out["plus"] == 2
    assert out["immutables"] == 9 and out["after"] == [1, (2, 3), "ab"]
    assert out["declared"] == 10 and out["prolog_ran"]      # JSON constraints and prolog
    assert out["typed"] == 2 and out["local"] is True
    assert out["prolog_arg"] is True and (tmp_path / "pro log.txt").exists()
    assert out["said"] == "hello  world\n"                   # one argument, spaces kept
    assert out["where"] == [str(tmp_path), "x"]


def test_data_as_pycompss_handles_it(tmp_path):
    out = ok(run_app("app_data.py", cwd=tmp_path, options=("--workers", "3")))
    assert out["returned_self"] and out["grown"] == 3          # returns="{{box}}"
    assert out["tracked"]                                      # OT: a read-only view
    assert out["wait_on"] == [15, 10, False, True]    # a new object; the old one unchanged
    assert out["local"] == [2, 2, 2]                  # @local: every reference is updated
    assert out["collections"] == [["list", 2, 3], ["list", 4, 6], ["list", 3, 3],
                                  ["list", 0, 0]]     # a set, a range, numpy, None
    assert out["generator_in"] == ["generator", [0, 1, 2]]
    assert out["generator_out"] == ["generator", [0, 1, 4, 9]]
    assert out["unknown_files"] == ["never.txt", ["nor.txt", ("this.txt",)]]
    assert out["deleted"] == "gone.txt" and out["unknown_dir"] == "no_dir"
    assert out["keep_rename"] == [True, "a.txt", True, "version"]
    assert out["dt"] == [12, 42, 6]                   # @dt, FILE_TO_OBJECT, dto at the call
    assert out["future_class"] and out["wait_on_any"] == "fast"


def test_io_tasks_on_io_executors_and_task_environment(tmp_path):
    """--io_executors: an @IO task takes no computing unit, so it runs while a computing
    task holds the whole node (the two meet); every task sees COMPSS_* and
    OMP_NUM_THREADS = its computing units."""
    out = ok(run_app("app_io.py", "60", cwd=tmp_path,
                     options=("--workers", "2", "--io_executors=2")))
    assert out["met"] == [True, True] and out["io_pid_not_compute"]
    assert out["file"] == "io0.txt"
    assert out["env1"] == ["1", "localhost", "1", "1"]
    assert out["env2"] == ["1", "localhost", "2", "2"]
    # without I/O executors (runcompss's default, 0) an @IO task takes a slot: the two
    # never run together (each waits 1 s for the other in vain)
    for mark in ("compute.mark", "io.mark"):
        (tmp_path / mark).unlink()
    out = ok(run_app("app_io.py", "1", cwd=tmp_path, options=("--workers", "2")))
    assert sorted(out["met"]) == [False, True] and not out["io_pid_not_compute"]


@needs_mpi
def test_io_mpi_ranks_are_io_executors(tmp_path):
    out = ok(run_app("app_io_mpi.py", cwd=tmp_path, options=("--workers", "1",
                                                             "--io_executors=2")))
    assert out == {"ranks": [2, 2], "met": [True, True, True]}
    r = run_app("app_io_mpi.py", cwd=tmp_path, options=("--workers", "1", "--io_executors=1"))
    assert r.returncode == 1
    assert "@mpi on dump: it needs 2 processes on I/O executors" in r.stderr


@needs_mpi
def test_mpi_decided_at_each_call_and_collection_layouts(tmp_path):
    out = ok(run_app("app_mpi_call.py", cwd=tmp_path, options=("--workers", "4")))
    assert out["sizes"] == [[3, 3, 3], [2, 2]]          # a global, read at each call
    assert out["scaled"] == [0, 1]                      # scale_by_cu x 2 units, returns=2
    assert out["blocks"] == [[0, 1], [3, 4]]            # one block per rank
    assert out["round_robin"] == [[0, 4], [2, 6]]       # blocks dealt to the ranks
    assert out["one_element"] == [[7], [8]]             # one element: itself, not [[7]]
    assert out["groups"] == [0, 1, 2, 3]     # processes_per_node groups share a node
    assert "returns=2 but this call runs 3 rank(s)" in out["mismatch"]


def test_multinode_groups_share_a_node(tmp_path):
    out = ok(run_app("app_groups.py", cwd=tmp_path, options=("--workers", "2")))
    assert out["two_groups"] == ["2", "localhost,localhost", "1", "1"]
    assert out["wide"] == ["1", "localhost"]


def test_replicated_task_writes_one_version(tmp_path):
    out = ok(run_app("app_replicated.py", cwd=tmp_path,
                     options=("--workers", "2", "--nodes", "2")))
    assert out["copies"] == 2 and out["agents"] == 2
    assert out["bumped"] == 5 and out["after"] == 5 and out["counter"] == 5
    names = [n for (n,) in journal(tmp_path).execute("SELECT name FROM tasks")]
    assert out["files"] == ["hello, copies!", ", copies!"]   # written files: one new version
    assert names.count("_copy") == 4 and names.count("_join") == 2     # two calls that write


def test_dds(tmp_path):
    out = ok(run_app("app_dds.py", cwd=tmp_path))
    assert out["collect"] == [2, 4, 8, 10, 14, 16]
    assert out["sum"] == 45 and out["count"] == 10 and out["reduce"] == 145
    assert out["rbk"] == [("a", 4), ("b", 2)] and out["cbv"] == {1: 2, 2: 1}
    assert out["distinct"] == [1, 2, 3] and out["max"] == 6
    assert out["flat"] == [0, 1, 0, 1, 2] and out["gbk"] == [("a", [1, 2]), ("b", [3])]
    assert out["sort"] == [1, 2, 3] and out["parts"] == [[0, 1, 2], [3, 4, 5]]


def test_env_script_failures_print_and_run_anyway(tmp_path):
    (tmp_path / "env.sh").write_text('export APP_SETTING="set before"\nno_such_command_x\n')
    r = run_app("app_launcher.py", "ok", cwd=tmp_path, options=("--env_script=env.sh",))
    out = ok(r)
    assert "no_such_command_x: command not found" in r.stderr
    assert out["env"] == "set before"
    r = run_app("app_launcher.py", "ok", cwd=tmp_path, options=("--env_script=missing.sh",))
    ok(r)
    assert "missing.sh: No such file or directory" in r.stderr


def test_graceful_stop_before_the_slurm_walltime(slurm, tmp_path):
    """Inside a Slurm job the run stops on its own --walltime_margin seconds before the
    job's end: finished outputs in place, the journal says interrupted, the summary
    names the command that resumes."""
    app = tmp_path / "long.py"
    app.write_text("import time\n"
                   "from pycompss.api.api import compss_barrier\n"
                   "from pycompss.api.parameter import FILE_OUT\n"
                   "from pycompss.api.task import task\n"
                   "@task(f=FILE_OUT)\ndef quick(f):\n    open(f, 'w').write('kept')\n"
                   "@task(returns=1)\ndef slow():\n    time.sleep(120)\n    return 1\n"
                   "quick('kept.txt')\ncompss_barrier()\nslow()\ncompss_barrier()\n"
                   "print('NOT REACHED')\n")
    script = tmp_path / "job.sh"
    script.write_text(f"#!/bin/bash\ncd {tmp_path}\nexec {sys.executable} -m taskflow run "
                      f"--compat pycompss --workers 1 --resumable --grace 2 "
                      f"--walltime_margin=52 {app}\n")
    t0 = time.time()
    sub = subprocess.run(["sbatch", "--parsable", "--time=1", "-J", "tf-walltime",
                          "-o", str(tmp_path / "job.out"), str(script)],
                         capture_output=True, text=True, timeout=30)
    assert sub.returncode == 0, sub.stderr
    job = sub.stdout.strip().split(";")[0]
    while time.time() - t0 < 50:
        state = subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], capture_output=True,
                               text=True, timeout=15).stdout.strip()
        if not state:
            break
        time.sleep(0.5)
    took = time.time() - t0
    subprocess.run(["scancel", job], capture_output=True, timeout=15)
    text = (tmp_path / "job.out").read_text()
    assert took < 45, text                       # stopped ~8 s in, not at the walltime
    assert "stopping the run gracefully now" in text and "NOT REACHED" not in text
    assert (tmp_path / "kept.txt").read_text() == "kept"
    assert "--resume" in text and text.rstrip().endswith(DASHES)
    runs = tmp_path / ".taskflow" / "runs"
    (run,) = os.listdir(runs)
    con = sqlite3.connect(str(runs / run / "journal.db"))
    assert "interrupted" in str(con.execute("SELECT * FROM run").fetchall())


def test_definition_only_modules_import(tmp_path):
    app = tmp_path / "imports.py"
    app.write_text("import pycompss.interactive as ipy\n"
                   "from pycompss.streams.distro_stream import ObjectDistroStream\n"
                   "from pycompss.util.exceptions import PyCOMPSsException\n"
                   "from pycompss.runtime.management.object_tracker import OT\n"
                   "from pycompss.api.task import task\n"
                   "@task(returns=1)\ndef one():\n    return 1\n"
                   "ipy.start()\n"
                   "from pycompss.api.api import compss_wait_on\n"
                   "print('RESULT', {'one': compss_wait_on(one()), "
                   "'pending': len(OT.pending_to_synchronize)})\n")
    out = ok(subprocess.run([sys.executable, "-m", "taskflow", "run", "--compat", "pycompss",
                             str(app)], cwd=str(tmp_path), capture_output=True, text=True,
                            timeout=60))
    assert out == {"one": 1, "pending": 0}
