"""``taskflow runs`` (which run is which) and ``taskflow clean`` (old runs go, one in use stays)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from taskflow.cli import main
from taskflow.cli.runs import parse_age, script_and_args
from taskflow.journal.reader import Journal, run_ids

OK = ("from taskflow import task, wait_on\n@task(returns=int)\ndef inc(x):\n    return x + 1\n"
      "import sys\nprint(wait_on(inc(int(sys.argv[1]))))\n")
BAD = ("from taskflow import task, wait_on\n@task(returns=int, retries=0)\ndef boom():\n"
       "    raise ValueError('no')\nwait_on(boom())\n")
# runs until the file it is given exists
HOLD = ("import os, sys, time\nfrom taskflow import task, wait_on\n@task(returns=int)\n"
        "def hold(path):\n    t0 = time.time()\n"
        "    while not os.path.exists(path) and time.time() - t0 < 120:\n"
        "        time.sleep(0.05)\n    return 1\nwait_on(hold(sys.argv[1]))\n")


def _run(tmp_path, argv, runs, check=True):
    r = subprocess.run([sys.executable, *argv], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120, env=dict(os.environ, TASKFLOW_RUN_DIR=str(runs),
                                             TASKFLOW_WORKERS="1"))
    if check:
        assert r.returncode in (0, 1), r.stderr
    return r


def _start_holding(tmp_path, runs, release):
    before = set(run_ids(str(runs)))
    # (--adopt-grace 0: a master killed here leaves no agent waiting to be adopted)
    proc = subprocess.Popen([sys.executable, "-m", "taskflow", "run", "-w", "1",
                             "--no-progress", "--adopt-grace", "0", "hold.py", str(release)],
                            cwd=tmp_path,
                            env=dict(os.environ, TASKFLOW_RUN_DIR=str(runs)),
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline:
        new = set(run_ids(str(runs))) - before
        if new:
            (rid,) = new
            with Journal(os.path.join(runs, rid)) as j:
                if j.counts()["total"]:          # started, its task submitted
                    return proc, rid
        time.sleep(0.05)
    proc.kill()
    pytest.fail("the holding run did not start")


@pytest.fixture
def some_runs(tmp_path):
    """Real runs under one directory: two that finished, one that failed."""
    for name, text in (("ok.py", OK), ("bad.py", BAD), ("hold.py", HOLD)):
        (tmp_path / name).write_text(text)
    runs = tmp_path / "runs"
    _run(tmp_path, ["-m", "taskflow", "run", "-w", "1", "--no-progress", "ok.py", "41"], runs)
    _run(tmp_path, ["ok.py", "1"], runs)                   # plain python
    _run(tmp_path, ["-m", "taskflow", "run", "-w", "1", "bad.py"], runs)
    return runs


def test_script_and_args_from_the_command_line():
    tf = "/venv/bin/taskflow"
    assert script_and_args([tf, "run", "-w", "2", "--trace", "wf.py", "a", "-b"]) == \
        ("wf.py", ["a", "-b"])
    assert script_and_args([tf, "run", "--resume", "wf.py", "x"]) == ("wf.py", ["x"])
    assert script_and_args([tf, "run", "--monitor", "8080", "wf.py"]) == ("wf.py", [])
    assert script_and_args([tf, "run", "--compat", "pycompss", "--project=p.xml", "-g",
                            "app.py", "3"]) == ("app.py", ["3"])
    assert script_and_args(["/x/taskflow/__main__.py", "run", "--run-dir", "r", "w.py"]) == \
        ("w.py", [])
    assert script_and_args(["wf.py", "in.txt"]) == ("wf.py", ["in.txt"])       # python wf.py
    assert script_and_args([]) == ("?", [])


def test_runs_shows_which_run_is_which(some_runs, tmp_path):
    out = CliRunner().invoke(main, ["runs", "--run-dir", str(some_runs)]).output
    head, *rows = out.splitlines()
    assert head.split() == ["RUN", "SCRIPT", "ARGS", "STATE", "STARTED", "DURATION", "TASKS"]
    assert len(rows) == 3, out
    ids = run_ids(str(some_runs))
    by_id = {r.split()[0]: r for r in rows}
    assert list(by_id) == ids                                    # oldest first
    first, second, third = (by_id[i] for i in ids)
    assert first.split()[1:3] == ["ok.py", "41"] and "1/1 done" in first
    assert second.split()[1:3] == ["ok.py", "1"]
    assert "bad.py" in third and "failed" in third and "0/1 done, 1 failed" in third
    # columns line up: each starts where the header's does
    for col in ("SCRIPT", "STATE", "TASKS"):
        at = head.index(col)
        assert all(r[at - 2:at] == "  " and r[at] != " " for r in rows), (col, out)


def test_clean_removes_old_runs_and_keeps_the_one_in_use(some_runs, tmp_path):
    release = tmp_path / "release"
    proc, live = _start_holding(tmp_path, some_runs, release)
    try:
        cli = CliRunner()
        old = [i for i in run_ids(str(some_runs)) if i != live]
        r = cli.invoke(main, ["clean", "--all", "--dry-run", "--run-dir", str(some_runs)])
        assert r.exit_code == 0 and "would remove 3 run(s)" in r.output, r.output
        assert set(run_ids(str(some_runs))) == {*old, live}            # nothing went
        r = cli.invoke(main, ["clean", "--failed", "--run-dir", str(some_runs)])
        assert r.exit_code == 0 and "removed 1 run(s)" in r.output, r.output
        assert f"removed {old[2]} (failed" in r.output
        r = cli.invoke(main, ["clean", "--all", "--run-dir", str(some_runs)])
        assert r.exit_code == 0, r.output
        assert f"kept {live}: in use (pid " in r.output
        assert f"removed {old[0]} (finished" in r.output and " KB)" in r.output
        assert "removed 2 run(s) from " in r.output and " freed; kept 1 in use" in r.output
        assert run_ids(str(some_runs)) == [live]
        r = cli.invoke(main, ["clean", "--all", "--run-dir", str(some_runs)])
        assert r.exit_code == 0
        assert "nothing to remove under" in r.output and "1 in use" in r.output, r.output
    finally:
        release.touch()
        proc.wait(60)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    r = CliRunner().invoke(main, ["clean", "--keep", "1", "--run-dir", str(some_runs)])
    assert r.exit_code == 0 and "nothing to remove" in r.output      # the newest is kept
    r = CliRunner().invoke(main, ["clean", "--older-than", "1h", "--run-dir", str(some_runs)])
    assert r.exit_code == 0 and "nothing to remove" in r.output
    r = CliRunner().invoke(main, ["clean", "--older-than", "0s", "--run-dir", str(some_runs)])
    assert r.exit_code == 0 and f"removed {live}" in r.output, r.output
    r = CliRunner().invoke(main, ["clean", "--all", "--run-dir", str(some_runs)])
    assert r.exit_code == 0 and "nothing to remove: no runs under" in r.output


def test_a_killed_run_is_not_in_use(tmp_path):
    """The lock goes with its holder, however it dies: a master killed with SIGKILL leaves
    a journal that says running and a lock nobody holds; clean removes it."""
    (tmp_path / "hold.py").write_text(HOLD)
    runs = tmp_path / "runs"
    proc, rid = _start_holding(tmp_path, runs, tmp_path / "never")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(30)
    assert os.path.exists(os.path.join(runs, rid, "run.lock"))          # left behind
    r = CliRunner().invoke(main, ["clean", "--all", "--run-dir", str(runs)])
    assert r.exit_code == 0 and f"removed {rid}" in r.output, r.output


def test_clean_says_what_it_needs():
    cli = CliRunner()
    r = cli.invoke(main, ["clean"])
    assert r.exit_code == 2 and "say which runs to remove: --older-than AGE" in r.output
    for bad in ("7", "7x", "d7", "soon", ""):
        r = cli.invoke(main, ["clean", "--older-than", bad])
        assert r.exit_code == 2, bad
        assert "expected an age such as 7d, 12h, 30m, 90s or 2w" in r.output, r.output
    assert parse_age("7d") == 7 * 86400 and parse_age("1d12h") == 36 * 3600
    assert parse_age(" 90S ") == 90 and parse_age("2w") == 14 * 86400
    assert parse_age("0.5h") == 1800


def test_a_run_being_resumed_is_kept_too(tmp_path):
    """A resumed run reads its source's log and data while it goes on: it holds the
    source's lock (shared), so clean keeps both."""
    (tmp_path / "hold.py").write_text(HOLD)
    runs = tmp_path / "runs"
    (tmp_path / "done").touch()
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(runs))
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "-w", "1", "--no-progress",
                        "--resumable", "hold.py", "done"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    (source,) = run_ids(str(runs))
    release = tmp_path / "release"
    proc = subprocess.Popen([sys.executable, "-m", "taskflow", "run", "-w", "1",
                             "--no-progress", "--resume", "hold.py", str(release)],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 60
        while len(run_ids(str(runs))) < 2 or not os.path.exists(runs / source / "run.lock"):
            assert time.time() < deadline and proc.poll() is None, "the resumed run did not start"
            time.sleep(0.05)
        (resumed,) = set(run_ids(str(runs))) - {source}
        r = CliRunner().invoke(main, ["clean", "--all", "--run-dir", str(runs)])
        assert r.exit_code == 0, r.output
        assert f"kept {source}: in use" in r.output and f"kept {resumed}: in use" in r.output
        assert sorted(run_ids(str(runs))) == sorted([source, resumed])
    finally:
        release.touch()
        proc.wait(60)
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""
    r = CliRunner().invoke(main, ["clean", "--all", "--run-dir", str(runs)])
    assert "removed 2 run(s)" in r.output, r.output
