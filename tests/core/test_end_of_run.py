"""What a run says at its end: each failure once, the user's frames, where the output is."""
from __future__ import annotations

import os
import re
import subprocess
import sys

from click.testing import CliRunner

from taskflow.cli import main
from taskflow.console.failures import fold_traceback, user_frames

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
    report = [ln for ln in err.splitlines() if not PROGRESS_LINE.match(ln)]
    assert len(report) <= 14, err


PROGRESS_LINE = re.compile(r"^\[\d+:\d\d(?::\d\d)?\] ")     # console/lines.py


def test_plain_python_says_it_once_as_taskflow_run_does(tmp_path):
    """`python wf.py` prints the report `taskflow run wf.py` prints (no progress lines:
    none is asked for): the script's line, the task's block with the user's frames,
    the summary; no Python traceback through taskflow, nothing twice."""
    (tmp_path / "wf.py").write_text(SCRIPT)
    env = dict(os.environ, TASKFLOW_WORKERS="2")
    plain = subprocess.run([sys.executable, "wf.py"], cwd=tmp_path,
                           env=dict(env, TASKFLOW_RUN_DIR=str(tmp_path / "plain")),
                           capture_output=True, text=True, timeout=120)
    tf = subprocess.run([sys.executable, "-m", "taskflow", "run", "-w", "2", "wf.py"],
                        cwd=tmp_path, env=dict(env, TASKFLOW_RUN_DIR=str(tmp_path / "tf")),
                        capture_output=True, text=True, timeout=120)
    assert plain.returncode == 1 and tf.returncode == 1
    for noise in ("Traceback", "Remote traceback", "executor.py", "sync.py", "future.py",
                  "The above exception", "task(s) failed"):
        assert noise not in plain.stderr, plain.stderr
    assert plain.stderr.count("FAILED on node") == 1
    assert plain.stderr.count("ZeroDivisionError") == 1
    (plain_id,), (tf_id,) = os.listdir(tmp_path / "plain"), os.listdir(tmp_path / "tf")

    def same(text: str, run_id: str) -> list[str]:       # the run's id and wall time aside
        text = re.sub(r" in [\d.]+ s:", " in T s:", text.replace(run_id, "RUN"))
        # (how many retries a loaded machine counts is not this test's business)
        text = re.sub(r"\d+ retried", "N retried", text)
        return [ln for ln in text.splitlines() if not PROGRESS_LINE.match(ln)]
    assert same(plain.stderr, plain_id) == same(tf.stderr, tf_id)
    assert 'File "wf.py", line 4, in helper' in plain.stderr


UNDECLARED = '''from taskflow import task

@task()
def write(path, text):
    with open(path, "w") as f:
        f.write(text)

write("out.txt", "hello")
print(open("out.txt").read())
'''


def test_a_file_a_task_wrote_undeclared_is_named_with_the_fix(tmp_path):
    (tmp_path / "wf.py").write_text(UNDECLARED)
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"), TASKFLOW_WORKERS="1")
    for argv in (["-m", "taskflow", "run", "-w", "1", "--no-progress", "wf.py"], ["wf.py"]):
        (tmp_path / "out.txt").unlink(missing_ok=True)
        r = subprocess.run([sys.executable, *argv], cwd=tmp_path, env=env,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 1, r.stderr
        err = r.stderr
        assert "FileNotFoundError" in err and "wf.py:9" in err
        assert "out.txt was given to task write (id 1) as a plain value (parameter path), " \
               "not as a file" in err, err
        assert "it exists now: the task wrote it after the script looked" in err
        assert "fix: declare it, @task(path=FILE_OUT)" in err
        assert "taskflow.open('out.txt')" in err
        assert err.count("FileNotFoundError") == 2          # the error line and its text


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
    from taskflow.console.failures import DETAILED, failure_lines
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
