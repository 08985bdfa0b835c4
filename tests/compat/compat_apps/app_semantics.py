"""The semantic differences PyCOMPSs applications rely on (issue 17, items 1-8)."""
import os

from pycompss.api.api import compss_barrier, compss_wait_on, compss_wait_on_directory
from pycompss.api.binary import binary
from pycompss.api.parameter import (COLLECTION_IN, DIRECTORY_OUT, FILE_IN,
                                    FILE_OUT_STDOUT)
from pycompss.api.task import task


class Counter(object):
    def __init__(self):
        self.n = 0

    @task()                         # 1. self is INOUT by default
    def bump(self, k):
        self.n += k


@task(returns=int, f=FILE_IN)       # 3. None for a FILE parameter reaches the task
def lines(f):
    if f is None:
        return -1
    with open(f) as fh:
        return len(fh.readlines())


@task(d=DIRECTORY_OUT)              # 4. DIRECTORY_OUT: the task makes it
def make_dir(d):
    existed = os.path.exists(d)
    os.makedirs(d)
    with open(os.path.join(d, "existed.txt"), "w") as fh:
        fh.write(str(existed))


@task(returns=int)
def one(x):
    print("TASK OUTPUT", x)         # 8. stays in the task's log
    return x


@task(returns=int, c=COLLECTION_IN)   # 5. collections are followed to any depth
def deep_sum(c):
    def walk(v):
        return sum(walk(x) for x in v) if isinstance(v, list) else v
    return walk(c)


@binary(binary="true")
@task()                              # 6. a binary without returns gives None
def no_returns():
    pass


@binary(binary="sh", args="-c '{{script}}'", fail_by_exit_value=False)
@task(returns=int)                   # 6. with returns=int: the exit code
def exit_code(script):
    pass


@binary(binary="printf", args="'%s|' {{words}} {{pattern}} *.dat")
@task(out=FILE_OUT_STDOUT)           # 7. a value is one argument; the template is bash's
def words(words, pattern, out):
    pass


if __name__ == "__main__":
    for name in ("a.dat", "b.dat", "c.txt"):
        open(name, "w").close()
    c = Counter()
    c.bump(2)
    c.bump(5)
    c = compss_wait_on(c)
    with open("in.txt", "w") as fh:
        fh.write("x\ny\n")
    n_none = compss_wait_on(lines(None))
    n_file = compss_wait_on(lines("in.txt"))
    make_dir("made")
    compss_wait_on_directory("made")
    existed = open(os.path.join("made", "existed.txt")).read()
    nested = [[one(1), [one(2), one(3)]], one(4)]
    total = compss_wait_on(deep_sum(nested))
    none = no_returns()
    code = compss_wait_on(exit_code("exit 3"))
    words("-n 4", "*.dat", "words.txt")
    compss_barrier()
    print("RESULT", {"counter": c.n, "none_file": n_none, "file": n_file,
                     "dir_existed": existed, "deep": total, "binary_none": none,
                     "exit_code": code, "words": open("words.txt").read()})
