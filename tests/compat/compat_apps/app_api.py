"""pycompss.api.api: every synchronisation call, and the shapes they give back."""
import os

from pycompss.api.api import (TaskGroup, compss_barrier, compss_barrier_group,
                              compss_delete_file, compss_delete_object, compss_file_exists,
                              compss_free_resources, compss_get_number_of_resources,
                              compss_open, compss_request_resources, compss_snapshot,
                              compss_start, compss_wait_on, compss_wait_on_directory,
                              compss_wait_on_file)
from pycompss.api.parameter import DIRECTORY_OUT, FILE_OUT, INOUT
from pycompss.api.task import task


@task(returns=int)
def inc(x):
    return x + 1


@task(f=FILE_OUT)
def write(f, text):
    with open(f, "w") as fh:
        fh.write(text)


@task(d=DIRECTORY_OUT)
def fill(d):
    os.makedirs(d)
    open(os.path.join(d, "part"), "w").write("p")


@task(lst=INOUT)
def append(lst, v):
    lst.append(v)


if __name__ == "__main__":
    compss_start()                                  # a no-op under the launcher
    out = {}
    nested = {"a": [inc(1), (inc(2), inc(3))], "b": {"c": inc(4)}}
    out["nested"] = compss_wait_on(nested)
    out["several"] = compss_wait_on(inc(10), inc(20))
    for name in ("f1.txt", "f2.txt", "f3.txt"):
        write(name, name)
    out["wait_file"] = compss_wait_on_file(["f1.txt", ("f2.txt", "f3.txt")])
    out["exists"] = compss_file_exists(["f1.txt", ["missing.txt", "f3.txt"]])
    out["exists_one"] = compss_file_exists("f2.txt")
    fill("dir_out")
    out["wait_dir"] = compss_wait_on_directory("dir_out")
    out["dir"] = sorted(os.listdir("dir_out"))
    write("g.txt", "hello")
    with compss_open("g.txt") as fh:
        out["open"] = fh.read()
    out["delete"] = compss_delete_file("f1.txt", "f2.txt")
    out["deleted"] = [os.path.exists("f1.txt"), os.path.exists("f2.txt")]
    lst = [1]
    append(lst, 2)
    out["delete_obj"] = compss_delete_object(lst)
    out["resources"] = compss_get_number_of_resources()
    compss_request_resources(1, None)               # fixed nodes: a warning, no change
    compss_free_resources(1, None)
    with TaskGroup("grp", implicit_barrier=False):
        g = [inc(i) for i in range(3)]
    compss_barrier_group("grp")
    out["group"] = compss_wait_on(g)
    compss_snapshot()
    r = inc(99)
    compss_barrier(no_more_tasks=True)
    out["after_barrier"] = compss_wait_on(r)
    print("RESULT", sorted(out.items()))
