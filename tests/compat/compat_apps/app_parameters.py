"""pycompss.api.parameter: the constants, the dictionary form, the older Parameter() form,
camelCase keywords, dictionaries and collections to any depth."""
from pycompss.api.api import compss_barrier, compss_wait_on, compss_wait_on_file
from pycompss.api.binary import binary
from pycompss.api.parameter import *  # noqa: F401,F403 - as applications do
from pycompss.api.parameter import (COLLECTION_FILE_IN, COLLECTION_IN_DELETE, COLLECTION_INOUT,
                                    COLLECTION_IN, DICTIONARY_IN, DICTIONARY_INOUT, DIRECTION, FILE_IN,
                                    FILE_CONCURRENT_STDOUT, FILE_INOUT, FILE_OUT, IOSTREAM,
                                    STDOUT, TYPE, Cache, Depth, Keep_rename, Parameter,
                                    StdIOStream, Type, Weight)
from pycompss.api.task import task


class Box(object):
    def __init__(self, v):
        self.v = v


@task(boxes=COLLECTION_INOUT)
def scale(boxes, k):
    for b in boxes:
        b.v *= k


@task(returns=int, d=DICTIONARY_IN)
def dict_sum(d):
    return sum(d.values())


@task(d=DICTIONARY_INOUT)
def dict_bump(d):
    for b in d.values():
        b.v += 1


@task(returns=int, c={Type: COLLECTION_IN_DELETE, Depth: 1})
def shallow(c):
    return len(c)


@task(returns=int, files=COLLECTION_FILE_IN)
def count_chars(files):
    return sum(len(open(f).read()) for f in files)


@task(f=Parameter(TYPE.FILE, DIRECTION.OUT))
def old_form(f):
    open(f, "w").write("old")


@task(f={Type: FILE_INOUT, Keep_rename: False, Cache: False, Weight: 2.0})
def add_line(f, text):
    open(f, "a").write(text + "\n")


@binary(binary="echo")
@task(log=FILE_CONCURRENT_STDOUT)
def log_line(text, log):
    pass


@binary(binary="echo")
@task(out=STDOUT)
def to_stdout(text, out):
    pass


@binary(binary="echo")
@task(out={Type: FILE_OUT, StdIOStream: IOSTREAM.STDOUT})
def to_stdout_dict(text, out):
    pass


@task(returns=int, timeOut=30, isDistributed=True)
def camel(x):
    return x


@task(returns=int, c=COLLECTION_IN)
def count_leaves(c):
    def walk(v):
        return sum(walk(x) for x in v) if isinstance(v, list) else 1
    return walk(c)


@task(returns=int)
def one():
    return 1


@task(returns=int, varargsType=FILE_IN)
def total_size(label, *files):
    return sum(len(open(f).read()) for f in files)


if __name__ == "__main__":
    out = {}
    boxes = [Box(1), Box(2)]
    scale(boxes, 10)
    out["collection_inout"] = [b.v for b in compss_wait_on(boxes)]
    out["dict_in"] = compss_wait_on(dict_sum({"a": one(), "b": one()}))
    d = {"x": Box(1), "y": Box(5)}
    dict_bump(d)
    d = compss_wait_on(d)
    out["dict_inout"] = sorted((k, b.v) for k, b in d.items())
    out["depth1"] = compss_wait_on(shallow([[1, 2], [3]]))
    for i, name in enumerate(("c1.txt", "c2.txt")):
        open(name, "w").write("x" * (i + 1))
    out["collection_file"] = compss_wait_on(count_chars(["c1.txt", "c2.txt"]))
    old_form("old.txt")
    open("lines.txt", "w").write("")
    add_line("lines.txt", "one")
    add_line("lines.txt", "two")
    open("log.txt", "w").write("")
    log_line("first", "log.txt")
    log_line("second", "log.txt")
    to_stdout("plain", "stdout.txt")
    to_stdout_dict("dict", "stdout_dict.txt")
    out["camel"] = compss_wait_on(camel(5))
    out["deep_leaves"] = compss_wait_on(count_leaves([[one(), [one(), [one()]]], one()]))
    for name in ("v1.txt", "v2.txt", "v3.txt"):
        old_form(name)                   # written by tasks: *files depend on them
    out["varargs_files"] = compss_wait_on(total_size("x", "v1.txt", "v2.txt", "v3.txt"))
    compss_barrier()
    compss_wait_on_file("old.txt", "lines.txt", "log.txt")
    out["old_form"] = open("old.txt").read()
    out["lines"] = open("lines.txt").read().split()
    out["log"] = open("log.txt").read().split()
    out["stdout"] = open("stdout.txt").read().strip()
    out["stdout_dict"] = open("stdout_dict.txt").read().strip()
    print("RESULT", sorted(out.items()))
