"""Declarations PyCOMPSs accepts (issue 29): unknown @task keywords, unknown decorator
arguments (warned), INOUT/OUT on immutables, @software on a declared @task, is_local,
$PWD in decorator strings."""
import os
import socket

from pycompss.api.api import compss_barrier, compss_wait_on, compss_wait_on_file
from pycompss.api.binary import binary
from pycompss.api.constraint import constraint
from pycompss.api.parameter import FILE_OUT_STDOUT, INOUT, OUT
from pycompss.api.prolog import prolog
from pycompss.api.software import software
from pycompss.api.task import task

HERE = os.path.dirname(os.path.abspath(__file__))


@task(returns=1, colour="red", cache_returns=False)      # colour names no parameter
def plus(x):
    return x + 1


@binary(binary="echo", colour="blue", args="{{text}}")   # warned, then ignored
@task(out=FILE_OUT_STDOUT)
def say(text, out):
    pass


@binary(binary="echo", args="$PWD {{x}}")                # the launch directory
@task(out=FILE_OUT_STDOUT)
def where(x, out):
    pass


@task(n=INOUT, t=INOUT, s=OUT, returns=1)                 # immutables: read, unchanged
def immutables(n, t, s):
    n += 1
    return n + sum(t) + len(s)


@software(config_file=os.path.join(HERE, "software_wrap.json"))
@task(returns=1)
def declared(x):                # a @task already: the JSON adds constraints and a prolog
    return x * int(os.environ["COMPSS_NUM_THREADS"])


@software(config_file=os.path.join(HERE, "software_returns.json"))
def typed(x):
    return x + 1


@prolog(binary="touch", args="{{name}}")              # one argument: a name with a space
@task(returns=1)
def after_prolog(name):
    return os.path.exists(name)


@constraint(is_local=True)
@task(returns=1)
def on_master():
    return socket.gethostname()


if __name__ == "__main__":
    os.chdir(os.path.dirname(os.path.abspath("marker")))
    n, t, s = 1, (2, 3), "ab"
    say("hello  world", "said.txt")
    where("x", "where.txt")
    out = {"plus": compss_wait_on(plus(1)),
           "immutables": compss_wait_on(immutables(n, t, s)), "after": [n, t, s],
           "declared": compss_wait_on(declared(5)),
           "typed": compss_wait_on(typed(1)),
           "local": compss_wait_on(on_master()) == socket.gethostname(),
           "prolog_arg": compss_wait_on(after_prolog("pro log.txt"))}
    compss_barrier()
    compss_wait_on_file("said.txt", "where.txt")
    out["said"] = open("said.txt").read()
    out["where"] = open("where.txt").read().split()
    out["prolog_ran"] = os.path.exists("prolog.txt")
    print("RESULT", sorted(out.items()))
