"""A newcomer's mistakes each end with a message that names the task, the parameter where
there is one, and the fix (issue 42's target; the issues' trials: 24's first contact, 42's
eleven mistakes, and the ones a first script makes most).

Each mistake is a small script run as a user runs it, ``taskflow run script.py``; the
test reads what the console printed. The same mistakes checked in-process elsewhere
(test_core_api, test_core_failures, test_first_contact, test_end_of_run) are checked
here end to end where what the console shows is the point; the table of which test
holds which message is in issue 42's closing note.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import pytest

from support import paths

SQUARE = '''
from taskflow import task, wait_on

@task(returns=int)
def square(x):
    return x * x
'''

# id -> (script, what the console must say: the task, the parameter, the fix)
MISTAKES = {
    # a future used as its value: Python alone says "unsupported operand type(s) for +"
    "future used as its value": (SQUARE + "print(square(3) + 1)\n",
                                 ["'+' on the future of task square",
                                  "wait_on(future) gives the value"]),
    "future unpacked without returns=2": (SQUARE + "low, high = square(3)\n",
                                          ["unpacking the future of task square",
                                           "declare @task(returns=N)"]),
    "a generator returned": ('''
from taskflow import task, wait_on

@task(returns=1)
def evens(n):
    return (i for i in range(n) if i % 2 == 0)

print(wait_on(evens(10)))
''', ["task evens produced a value of type generator", "return list(...)"]),
    "an argument that cannot travel": ('''
import threading
from taskflow import task, wait_on

@task(returns=int)
def guarded(lock, x):
    with lock:
        return x

print(wait_on(guarded(threading.Lock(), 1)))
''', ["task guarded, parameter 'lock'", "create the object inside the task"]),
    "FILE_IN that does not exist": ('''
from taskflow import FILE_IN, task, wait_on

@task(returns=int, path=FILE_IN)
def count(path):
    return len(open(path).read())

print(wait_on(count("input.csv")))
''', ["task count, parameter 'path' is FILE_IN", "input.csv does not exist",
      "Create it first, fix the path, or declare the parameter as FILE_OUT"]),
    # issue 42, 2: an input declared FILE_OUT, read by the task
    "FILE_OUT on an existing input": ('''
from taskflow import FILE_OUT, task, wait_on

with open("input.csv", "w") as f:
    f.write("a,b\\n")

@task(returns=int, src=FILE_OUT)
def count_chars(src):
    return len(open(src).read())

print(wait_on(count_chars("input.csv")))
''', ["task count_chars", "parameter 'src' is FILE_OUT", "declare src=FILE_IN"]),
    # issue 42, 2: OUT given a path
    "OUT given a path": ('''
from taskflow import OUT, task

@task(out=OUT)
def fill(out):
    out.append(1)

fill("result.txt")
''', ["task fill, parameter 'out' is OUT", "declare it out=FILE_OUT"]),
    # issue 42, 3: wait_on of a generator, of a task function
    "wait_on of a generator": (SQUARE + "wait_on(square(i) for i in range(3))\n",
                               ["wait_on(generator object)", "wait_on(list(...))"]),
    "wait_on of the task function": (SQUARE + "wait_on(square)\n",
                                     ["wait_on(square): that is the task function itself",
                                      "wait_on(square(...))"]),
    # issue 42, 9: a time_out names the task, the limit and the remedy, one error name
    "a time_out": ('''
import time
from taskflow import task, wait_on

@task(returns=int, time_out=1)
def stuck():
    time.sleep(60)
    return 0

wait_on(stuck())
''', ["task stuck", "TaskTimeout: ran longer than time_out=1 s",
      "raise its time_out (@task(time_out=...) on stuck)"]),
    "on_failure misspelt": ('''
from taskflow import task

@task(on_failure="IGNOR")
def tolerant(x):
    return x
''', ["@task on tolerant: on_failure='IGNOR'", 'Did you mean on_failure="IGNORE"?']),
    "returns=2 given one value": ('''
from taskflow import task, wait_on

@task(returns=2)
def bounds(xs):
    return min(xs)

low, high = bounds([3, 1, 2])
print(wait_on(low))
''', ["task bounds declared returns=2", "return a tuple of 2 values or change returns="]),
    # issue 42, 9: one unreachable SSH host in a cluster file that also has the local node
    # (nothing listens on port 1: refused at once, no testbed needed)
    "an unreachable SSH host": (SQUARE + "print(wait_on(square(3)))\n",
                                ["node far (", "cannot connect",
                                 "answers SSH on port 1", "take node far out of the file"]),
}

CLUSTER = {   # mistake -> its cluster file (the others run on the default local node)
    "an unreachable SSH host": "nodes:\n  - {name: local, local: true, computing_units: 1}\n"
                               "  - {name: far, host: 127.0.0.1, port: 1, computing_units: 1}\n",
}


def _run(tmp_path, script, cluster=None):
    (tmp_path / "wf.py").write_text(textwrap.dedent(script))
    where = ["-w", "1"]
    if cluster is not None:
        (tmp_path / "nodes.yaml").write_text(cluster)
        where = ["--cluster", "nodes.yaml"]
    env = dict(os.environ, PYTHONPATH=os.path.join(paths.ROOT, "src"),
               TASKFLOW_RUN_DIR=str(tmp_path / "runs"))
    return subprocess.run([sys.executable, "-m", "taskflow", "run", *where, "--no-progress",
                           "wf.py"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("mistake", list(MISTAKES))
def test_a_mistake_ends_with_the_task_the_parameter_and_the_fix(mistake, tmp_path):
    script, says = MISTAKES[mistake]
    r = _run(tmp_path, script, CLUSTER.get(mistake))
    assert r.returncode != 0, f"{mistake}: the run did not fail\n{r.stdout}\n{r.stderr}"
    missing = [s for s in says if s not in r.stderr]
    assert not missing, f"{mistake}: the console does not say {missing}:\n{r.stderr}"
    store = re.compile(re.escape(str(tmp_path / "runs")) + r"/[^/\s]+/data/")
    assert not store.search(r.stderr)     # the user's paths, never a version's (the store's)
