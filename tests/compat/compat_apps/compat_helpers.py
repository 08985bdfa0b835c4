"""Tasks in a module of the application (not its main script): on the workers this module is
imported by name, and its `from pycompss...` imports must resolve there too."""
from pycompss.api.binary import binary
from pycompss.api.parameter import FILE_OUT, FILE_OUT_STDOUT
from pycompss.api.task import task


class Acc(object):
    def __init__(self):
        self.items = []

    @task()
    def add(self, v):
        self.items.append(v)


@task()
def split_pair(x):
    return x // 10, x % 10


@task(returns=FILE_OUT)
def path_of(name):
    return name


@task(f=FILE_OUT)
def write(f, text):
    with open(f, "w") as fh:
        fh.write(text)


@binary(binary="echo", params="{{a}} {{b}}")
@task(out=FILE_OUT_STDOUT)
def echo_params(a, b, out):
    pass
