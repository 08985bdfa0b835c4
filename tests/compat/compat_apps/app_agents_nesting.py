"""A PyCOMPSs application written for its agents: a task that calls itself down to 1 and
waits for each call (as PyCOMPSs's agents' nested tests do), a task that reports whether
its calls of tasks are submitted (CONTEXT.is_nesting_enabled()) and, with "files", a task
whose children write, append to and copy (@binary) files it then waits for."""
import os
import sys

from pycompss.api.api import compss_barrier, compss_wait_on, compss_wait_on_file
from pycompss.api.binary import binary
from pycompss.api.parameter import FILE_IN, FILE_INOUT, FILE_OUT
from pycompss.api.task import task
from pycompss.util.context import CONTEXT


@task(returns=1)
def count(n):
    below = compss_wait_on(count(n - 1)) if n > 1 else 0
    return below + 1


@task(returns=1)
def nesting():
    return CONTEXT.is_nesting_enabled()


@task(path=FILE_OUT)
def write(path, text):
    with open(path, "w") as f:
        f.write(text)


@task(path=FILE_INOUT)
def append(path, text):
    with open(path, "a") as f:
        f.write(text)


@binary(binary="cp")
@task(src=FILE_IN, dst=FILE_OUT)
def copy(src, dst):
    pass


@task(returns=1)
def files_in_task(where):
    a, b = os.path.join(where, "a.txt"), os.path.join(where, "b.txt")
    write(a, "made ")
    append(a, "in a task")
    copy(a, b)
    compss_wait_on_file(b)          # the copy ended and b is here
    with open(b) as f:
        text = f.read()
    compss_barrier()
    return text


if __name__ == "__main__":
    n = int(sys.argv[1])
    out = {"count": compss_wait_on(count(n)), "in_task": compss_wait_on(nesting()),
           "in_main": CONTEXT.is_nesting_enabled()}
    if sys.argv[2:] == ["files"]:
        out["copied"] = compss_wait_on(files_in_task(os.getcwd()))
    print("RESULT", out)
