"""What a run says at its end: each failure once, the user's frames, where the output is."""
from __future__ import annotations

import os
import subprocess
import sys

from click.testing import CliRunner

from taskflow.cli import main
from taskflow.runtime.failreport import fold_traceback, user_frames

REMOTE = '''Traceback (most recent call last):
  File "/opt/site-packages/taskflow/agent/executor.py", line 417, in _run_tasks
    r = func(*argv)
        ^^^^^^^^^^^
  File "/home/u/wf.py", line 9, in divide
    return helper(x)
  File "/home/u/wf.py", line 4, in helper
    return 1 / x
ZeroDivisionError: division by zero
'''


def test_fold_traceback_keeps_the_users_frames_only():
    lines, folded = fold_traceback(REMOTE)
    text = "\n".join(lines)
    assert folded == 1 and "executor.py" not in text and "r = func(*argv)" not in text
    assert "  ... 1 taskflow frame" in text and text.endswith("ZeroDivisionError: division by zero")
    assert user_frames(REMOTE) == ['  File "/home/u/wf.py", line 9, in divide',
                                   "    return helper(x)",
                                   '  File "/home/u/wf.py", line 4, in helper',
                                   "    return 1 / x"]
    # a user's own package that happens to be called like one of ours is not folded
    mine = REMOTE.replace("/home/u/wf.py", "/home/u/agent/wf.py")
    assert len(user_frames(mine)) == 4
    runpy = 'Traceback (most recent call last):\n  File "<frozen runpy>", line 291, in run_path\n' \
            '  File "/x/taskflow/cli/run.py", line 93, in run\n    runpy.run_path(script)\n' \
            '  File "wf.py", line 3, in <module>\n    f()\nValueError: v\n'
    assert fold_traceback(runpy)[1] == 2 and user_frames(runpy) == ['  File "wf.py", line 3, in <module>',
                                                                     "    f()"]


SCRIPT = '''from taskflow import task, wait_on

def helper(x):
    return 1 / x

@task(returns=int)
def divide(x):
    print("dividing", x)
    return helper(x)

@task(returns=int)
def add(a, b):
    return a + b

print(wait_on(add(divide(0), 1)))
'''


def test_a_failed_run_says_it_once(tmp_path):
    (tmp_path / "wf.py").write_text(SCRIPT)
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "-w", "2", "--run-dir",
                        str(tmp_path / "runs"), "wf.py"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 1
    err = r.stderr
    (run_id,) = os.listdir(tmp_path / "runs")
    # where the script stopped, in one line
    assert "taskflow: the script stopped at wf.py:15: TaskCancelled: task add (id 2) was " \
           "cancelled because task divide (id 1) failed\n" in err
    # the failed task: name, id, node, error, the user's frames, its logs and what it cancelled
    assert "taskflow: task divide (id 1) FAILED on node local\n" \
           "  ZeroDivisionError: division by zero\n" in err     # (one attempt: no retries)
    assert 'wf.py", line 9, in divide' in err and 'wf.py", line 4, in helper' in err
    assert "return 1 / x" in err               # the helper's source line, not <dynamic-code>
    assert f"  output and full traceback: taskflow logs {run_id} 1 --run-dir " in err
    assert "  not run because of it: add (id 2)" in err
    # once, and without taskflow's frames
    assert err.count("ZeroDivisionError") == 1 and err.count("taskflow logs") == 1
    for noise in ("Remote traceback", "executor.py", "runpy", "cli/run.py", "sync.py",
                  "The above exception"):
        assert noise not in err
    assert err.rstrip().splitlines()[-1].startswith(f"taskflow: run {run_id} FAILED in ")
    assert len(err.splitlines()) <= 14, err


def test_a_script_error_is_folded_too(tmp_path):
    (tmp_path / "wf.py").write_text("from taskflow import task, wait_on\n\n"
                                    "def main():\n    raise KeyError('no such key')\n\nmain()\n")
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "-w", "1", "--run-dir",
                        str(tmp_path / "runs"), "wf.py"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 1
    assert "taskflow: the script raised KeyError at wf.py:4:" in r.stderr
    assert 'wf.py", line 6, in <module>' in r.stderr and "KeyError: 'no such key'" in r.stderr
    assert "runpy" not in r.stderr and "cli/run.py" not in r.stderr


def test_logs_say_where_the_output_is(tmp_path):
    (tmp_path / "wf.py").write_text('''import os
from taskflow import FILE_OUT_STDOUT, barrier, binary, task

@binary(binary="/bin/echo")
@task(out=FILE_OUT_STDOUT)
def echo(word, out):
    pass

@task(returns=int)
def quiet(x):
    return x

echo("hello", "out/echo.txt")
quiet(1)
barrier()
''')
    r = subprocess.run([sys.executable, "-m", "taskflow", "run", "-w", "2", "--run-dir",
                        str(tmp_path / "runs"), "wf.py"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out" / "echo.txt").read_text() == "hello\n"
    cli = CliRunner()
    out = cli.invoke(main, ["logs", "1", "--run-dir", str(tmp_path / "runs")]).output
    assert "-- task 1 echo (done) wrote no output lines to the journal" in out
    assert f"-- its stdout went to {tmp_path}/out/echo.txt (parameter out)" in out
    assert "jobs/job1" not in out               # stderr got nothing: no job file was made
    out = cli.invoke(main, ["logs", "2", "--run-dir", str(tmp_path / "runs")]).output
    assert out == "-- task 2 quiet (done) wrote no output lines to the journal\n"


def test_the_runs_own_failure_comes_first_and_is_not_called_a_task():
    """No node left: the run's failure (task id 0) is recorded after the tasks it failed;
    the report puts it first (it says why none was tried again: found by
    benchmarks/chaos.py, where it was cut off behind 20 NodeLost lines) and calls it
    "the run FAILED", not "task  (id 0)"."""
    from types import SimpleNamespace

    from taskflow.errors import TaskError
    from taskflow.runtime.failreport import DETAILED, failure_lines
    errs = [TaskError(f"task f (id {i}) failed on node n: boom", task_name="f", task_id=i,
                      node="n") for i in range(1, DETAILED + 2)]
    errs.append(TaskError("no nodes left: node n was lost (its connection closed)",
                          kind="lost"))
    rt = SimpleNamespace(failures=errs, run_dir=None, run_id="r",
                         logs_command=lambda tid: f"taskflow logs r {tid}")
    errs += [TaskError(f"task f (id {i}) failed on node n: boom", task_name="f", task_id=i,
                       node="n") for i in range(100, 130)]      # more than the report shows
    lines = failure_lines(rt)
    assert lines[0] == "the run FAILED"
    assert "no nodes left: node n was lost (its connection closed)" in lines[1]
    assert not any("(id 0)" in ln for ln in lines)
    assert f"task f (id {DETAILED + 1}) FAILED: boom" in lines
