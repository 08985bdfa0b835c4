"""Results users can trust: edits after a sync call, the main script's classes, values held
on several nodes, and the answers to a catalogue of bad input (docs/errors.md)."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest
from click.testing import CliRunner

import taskflow
from taskflow import (DIRECTORY_IN, DIRECTORY_INOUT, FILE_IN, FILE_INOUT, UsageError, task,
                      wait_on, wait_on_directory, wait_on_file)
from taskflow.cli import main


@task(f=FILE_INOUT)
def append(f):
    with open(f, "a") as fh:
        fh.write("+task")


@task(returns=str, f=FILE_IN)
def read(f):
    with open(f) as fh:
        return fh.read()


@task(d=DIRECTORY_INOUT)
def add_file(d, name):
    with open(os.path.join(d, name), "w") as fh:
        fh.write(name)


@task(returns=list, d=DIRECTORY_IN)
def listing(d):
    return sorted(os.listdir(d))


def test_an_edit_after_wait_on_file_is_what_the_next_task_reads(rt, tmp_path):
    p = tmp_path / "data.txt"
    p.write_text("v0")
    append(str(p))
    assert wait_on_file(str(p)) == str(p)
    with open(p, "a") as fh:
        fh.write("+main")                       # the file is the program's now
    assert wait_on(read(str(p))) == "v0+task+main"
    append(str(p))                              # and tasks version it again from there
    assert wait_on(read(str(p))) == "v0+task+main+task"
    taskflow.barrier()
    p.write_text("after barrier")                # a barrier hands files back too
    assert wait_on(read(str(p))) == "after barrier"


def test_an_edit_after_wait_on_directory_is_what_the_next_task_sees(rt, tmp_path):
    d = tmp_path / "dir"
    d.mkdir()
    add_file(str(d), "a")
    wait_on_directory(str(d))
    (d / "main").write_text("main")
    assert wait_on(listing(str(d))) == ["a", "main"]


def test_wait_on_file_of_a_path_no_task_uses_and_that_does_not_exist_is_an_error(rt, tmp_path):
    p = tmp_path / "used.txt"
    p.write_text("x")
    wait_on(read(str(p)))
    with pytest.raises(UsageError, match=r"no task reads or writes .*usd\.txt.*did you mean"):
        wait_on_file(str(tmp_path / "usd.txt"))
    assert wait_on_file(str(p)) == str(p)        # known, or simply existing: fine


def test_a_generator_or_async_function_cannot_be_a_task():
    def gen(n):
        yield from range(n)

    async def coro():
        return 1

    with pytest.raises(UsageError, match="gen: a generator function cannot be a task"):
        task(gen)
    with pytest.raises(UsageError, match="coro: an async function cannot be a task"):
        task(coro)


@task(returns=int)
def gives_text():
    return "text"


def test_returns_types_are_documentation_only_counts_are_checked(rt):
    # as in PyCOMPSs: returns=int says how many values (one), not their type
    assert wait_on(gives_text()) == "text"


def test_workers_and_nodes_are_checked_and_slots_are_split(tmp_path):
    for kw, msg in (({"workers": 0}, "workers=0: give a number of executor slots >= 1"),
                    ({"workers": -3}, "workers=-3"),
                    ({"workers": 2, "nodes": 0}, "nodes=0"),
                    ({"workers": 2, "nodes": 3}, "cannot be split over nodes=3")):
        with pytest.raises(UsageError, match=msg):
            taskflow.Runtime(run_dir=str(tmp_path), **kw)
    with taskflow.Runtime(workers=3, nodes=2, run_dir=str(tmp_path / "runs"),
                          journal=False) as rt:
        assert sorted(n.slots for n in rt.nodes) == [1, 2]      # split, not 3 each


def test_the_cli_rejects_bad_counts_without_a_traceback(tmp_path):
    script = tmp_path / "wf.py"
    script.write_text("print('ran')\n")
    cli = CliRunner()
    for args, bad in ((["--workers", "0"], "--workers"), (["--workers", "-3"], "--workers"),
                      (["--nodes", "0"], "--nodes"), (["--workers", "1", "--nodes", "2"],
                                                      "cannot be split")):
        r = cli.invoke(main, ["run", *args, str(script)])
        assert r.exit_code == 2, (args, r.output)
        assert bad in r.output and "Traceback" not in r.output, r.output


def test_status_exits_non_zero_for_a_failed_run(tmp_path):
    script = tmp_path / "wf.py"
    script.write_text(textwrap.dedent("""
        from taskflow import task, wait_on
        @task(returns=int, retries=0)
        def boom():
            raise ValueError("no")
        boom()
    """))
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"))
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", str(script)], cwd=tmp_path,
                       env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1
    st = subprocess.run([sys.executable, "-m", "taskflow", "status"], cwd=tmp_path, env=env,
                        capture_output=True, text=True, timeout=60)
    assert st.returncode == 1 and ": failed" in st.stdout


MAIN_SCRIPT = """
import taskflow
from taskflow import task, wait_on, INOUT, COLLECTION_IN

class Point:
    def __init__(self, x):
        self.x = x

def scale(v):
    return 10 * v

@task(returns=int)
def get_x(p):
    return p.x

@task(returns=1)
def make(x):
    return Point(x)

@task(p=INOUT)
def bump(p):
    p.x += 1

@task(returns=int, ps=COLLECTION_IN)
def total(ps):
    return sum(p.x for p in ps)

@task(returns=int)
def apply(f, v):
    return f(v)

if __name__ == "__main__":
    p = Point(3)
    q = wait_on(make(5))
    bump(p)
    wait_on(p)
    print(wait_on(get_x(Point(3))), isinstance(q, Point), q.x, p.x,
          wait_on(total([Point(1), Point(2), make(4)])), wait_on(apply(scale, 4)))
"""


@pytest.mark.parametrize("how", ["python", "taskflow run"])
def test_classes_and_functions_of_the_main_script_travel_by_value(tmp_path, how):
    script = tmp_path / "points.py"
    script.write_text(MAIN_SCRIPT)
    cmd = [sys.executable, str(script)] if how == "python" else \
        [sys.executable, "-m", "taskflow", "run", "--no-progress", str(script)]
    r = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs")))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["3", "True", "5", "4", "7", "40"]


@task(returns=1)
def big(i):
    time.sleep(0.3)
    return bytes([i]) * (300 * 1024)             # over the inline size: stays on its node


@task(returns=1)
def add3(a, b, c):
    return a[0] + b[0] + c[0]


def test_a_task_whose_large_inputs_sit_on_three_nodes_runs(tmp_path):
    with taskflow.Runtime(workers=3, nodes=3, run_dir=str(tmp_path / "runs"),
                          echo_logs=False) as rt:
        a, b, c = big(1), big(2), big(3)
        taskflow.barrier()
        assert len({next(iter(f._holders)) for f in (a, b, c)}) == 3, "one value per node"
        assert wait_on(add3(a, b, c)) == 6
        assert not rt.failed


def test_run_directories_and_journals_are_user_only_whatever_the_umask(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TASKFLOW_RUN_DIR", raising=False)
    old = os.umask(0)                 # the most permissive umask: nothing may depend on it
    try:
        with taskflow.Runtime(workers=1, echo_logs=False) as rt:      # .taskflow/runs/<id>
            wait_on(read(__file__))
            data_dir = rt.data_dir
            assert os.stat(data_dir).st_mode & 0o777 == 0o700
            rt.bus.flush()
            time.sleep(0.7)           # the writer has written (and made its -wal) by now
            live = [f for f in os.listdir(rt.run_dir) if f.startswith("journal.db")]
            assert any(f.endswith("-wal") for f in live), live
            for f in live:
                assert os.stat(os.path.join(rt.run_dir, f)).st_mode & 0o777 == 0o600, f
        run_dir = rt.run_dir
    finally:
        os.umask(old)
    for d in (tmp_path / ".taskflow", tmp_path / ".taskflow" / "runs", run_dir):
        assert os.stat(d).st_mode & 0o777 == 0o700, d
    files = [f for f in os.listdir(run_dir) if f.startswith("journal.db")]
    assert "journal.db" in files
    for f in files:                   # the database and any -wal/-shm beside it
        assert os.stat(os.path.join(run_dir, f)).st_mode & 0o777 == 0o600, f
