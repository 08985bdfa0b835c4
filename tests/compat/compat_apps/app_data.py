"""Data as PyCOMPSs handles it (issue 29): returns="{{param}}", compss_wait_on's copy and
@local's references, collections from any sized iterable, generators, names no task uses,
Keep_rename, the object tracker, data transformations, compss_wait_on_any."""
import os
import re
import time

import numpy as np
from pycompss.api.api import (compss_delete_file, compss_wait_on, compss_wait_on_any,
                              compss_wait_on_directory, compss_wait_on_file)
from pycompss.api.data_transformation import FILE_TO_OBJECT, dt, dto
from pycompss.api.local import local
from pycompss.api.parameter import (COLLECTION_FILE_IN, COLLECTION_IN, FILE_IN, FILE_OUT,
                                    INOUT, Keep_rename, Type)
from pycompss.api.task import task
from pycompss.runtime.management.classes import Future
from pycompss.runtime.management.object_tracker import OT


class Box(object):
    def __init__(self, v):
        self.v = v


@task(returns="{{box}}")
def grown(box, k):
    return Box(box.v + k)


@task(b=INOUT)
def add(b, k):
    b.v += k


@task(returns=1, c=COLLECTION_IN)
def describe(c):
    return [type(c).__name__, len(c), int(sum(c))]


@task(returns=1)
def drain(gen):
    return [type(gen).__name__, list(gen)]


@task()
def squares(n):
    for i in range(n):
        yield i * i


@task(f={Type: FILE_IN, Keep_rename: True}, g=FILE_IN, fs={Type: COLLECTION_FILE_IN,
                                                          Keep_rename: True})
def names(f, g, fs):
    return [os.path.basename(f), os.path.basename(g), [os.path.basename(x) for x in fs],
            open(f).read()]


@task(out=FILE_OUT)
def write(out, text):
    with open(out, "w") as fh:
        fh.write(text)


def double_all(values):
    return [2 * v for v in values]


def load_number(path):
    with open(path) as fh:
        return int(fh.read())


@dt("data", double_all)
@task(returns=1)
def total(data):
    return sum(data)


@dt(target="data", function=load_number, type=FILE_TO_OBJECT)
@task(returns=1)
def plus_one(data):
    return data + 1


@dt()
@task(returns=1)
def either(data):
    return sum(data)


@task(returns=1)
def sleepy(seconds, tag):
    time.sleep(seconds)
    return tag


@local
def peek(b):
    return b.v


if __name__ == "__main__":
    out = {}
    box = Box(1)
    same = grown(box, 2)                       # the argument object comes back...
    out["returned_self"] = same is box
    out["grown"] = compss_wait_on(box).v       # ...and its next version is the task's value
    b = Box(10)
    add(b, 5)
    out["tracked"] = OT.is_tracked(b) != "" and bool(OT.pending_to_synchronize)
    new = compss_wait_on(b)                    # a new object; the one passed is as it was
    out["wait_on"] = [new.v, b.v, new is b, OT.is_tracked(b) == ""]
    c = Box(1)
    holder = [c]
    add(c, 1)
    out["local"] = [peek(c), c.v, holder[0].v]     # @local: every reference is the new one
    out["collections"] = compss_wait_on([describe({1, 2}), describe(range(4)),
                                         describe(np.arange(3)), describe(None)])
    out["generator_in"] = compss_wait_on(drain(x for x in range(3)))
    gen = compss_wait_on(squares(4))
    out["generator_out"] = [type(gen).__name__, list(gen)]
    out["unknown_files"] = compss_wait_on_file("never.txt", ["nor.txt", ("this.txt",)])
    write("gone.txt", "x")
    compss_delete_file("gone.txt")
    out["deleted"] = compss_wait_on_file("gone.txt")
    out["unknown_dir"] = compss_wait_on_directory("no_dir")
    for name, text in (("a.txt", "A"), ("b.txt", "B"), ("c.txt", "C")):
        with open(name, "w") as fh:
            fh.write(text)
    write("v.txt", "version")
    n = compss_wait_on(names("v.txt", "a.txt", ["b.txt", "c.txt"]))
    pat = re.compile(r"^d\d+v\d+_\d+\.IT$")
    out["keep_rename"] = [bool(pat.match(n[0])), n[1], all(pat.match(x) for x in n[2]), n[3]]
    with open("number.txt", "w") as fh:
        fh.write("41")
    out["dt"] = compss_wait_on([total([1, 2, 3]), plus_one("number.txt"),
                                either([1, 2], dt=dto("data", double_all))])
    out["future_class"] = isinstance(sleepy(0, "x"), Future)
    first = compss_wait_on_any([sleepy(2, "slow"), sleepy(0.1, "fast")])
    out["wait_on_any"] = first
    print("RESULT", sorted(out.items()))
