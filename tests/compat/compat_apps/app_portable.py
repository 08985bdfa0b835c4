"""An application whose spelling both launchers accept: PyCOMPSs's names under
--compat pycompss, taskflow's own names under plain taskflow run."""
try:
    from pycompss.api.api import TaskGroup, compss_barrier, compss_wait_on
    from pycompss.api.api import compss_wait_on_file
    from pycompss.api.parameter import FILE_IN, FILE_OUT, INOUT
    from pycompss.api.task import task
except ImportError:         # plain taskflow run: no pycompss, the same API under its own names
    from taskflow import (FILE_IN, FILE_OUT, INOUT, TaskGroup, task)
    from taskflow import barrier as compss_barrier
    from taskflow import wait_on as compss_wait_on
    from taskflow import wait_on_file as compss_wait_on_file


@task(returns=int)
def square(x):
    print("printed by a task", x)
    return x * x


@task(returns=int)
def total(values):
    return sum(values)


@task(acc=INOUT)
def push(acc, v):
    acc.append(v)


@task(path=FILE_OUT)
def write(path, value):
    with open(path, "w") as fh:
        fh.write(str(value))


@task(returns=str, path=FILE_IN)
def read(path):
    with open(path) as fh:
        return fh.read()


if __name__ == "__main__":
    s = total([square(i) for i in range(5)])
    acc = []
    push(acc, 1)
    push(acc, 2)
    write("sum.txt", s)
    text = read("sum.txt")
    with TaskGroup("g"):
        g = [square(i) for i in range(3)]
    compss_barrier()
    compss_wait_on_file("sum.txt")
    print("RESULT", {"squares": compss_wait_on(s), "acc": compss_wait_on(acc),
                     "file": compss_wait_on(text),
                     "groups": [int(v ** 0.5) for v in compss_wait_on(g)]})
