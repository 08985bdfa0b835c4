"""@on_failure: management policies and default values of the failed task's outputs."""
from pycompss.api.api import compss_barrier, compss_wait_on, compss_wait_on_file
from pycompss.api.on_failure import on_failure
from pycompss.api.parameter import FILE_OUT, INOUT
from pycompss.api.task import task


def make_default(path):
    with open(path, "w") as fh:
        fh.write("DEFAULT")
    return path


@on_failure(management="IGNORE", returns=0)
@task(returns=int)
def fails_with_default(x):
    raise ValueError("on purpose")


@on_failure(management="IGNORE", f_out=make_default("default.txt"))
@task(f_out=FILE_OUT)
def fails_file(f_out):
    raise ValueError("on purpose")


@on_failure(management="IGNORE", box=[-1])
@task(box=INOUT)
def fails_inout(box):
    box.append(1)
    raise ValueError("on purpose")


@on_failure(management="CANCEL_SUCCESSORS")
@task(returns=int)
def fails_cancel(x):
    raise ValueError("on purpose")


@task(returns=int)
def successor(x):
    return x + 1


if __name__ == "__main__":
    out = {"ignored": compss_wait_on(fails_with_default(1))}
    fails_file("out.txt")
    compss_wait_on_file("out.txt")
    out["file"] = open("out.txt").read()
    box = [5]
    fails_inout(box)
    out["inout"] = compss_wait_on(box)
    s = successor(fails_cancel(1))
    out["cancelled_successor"] = compss_wait_on(s)
    compss_barrier()
    print("RESULT", sorted(out.items()))
