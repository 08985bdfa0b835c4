"""A small run for the crate tests: a FILE_IN read, a FILE_OUT written, a @binary task."""
import sys

from taskflow import FILE_IN, FILE_OUT, binary, task, wait_on, wait_on_file


@task(src=FILE_IN, dst=FILE_OUT)
def upper(src, dst, label="x"):
    with open(src) as f, open(dst, "w") as g:
        g.write(label + ":" + f.read().upper())


@binary(binary="wc", args="-c {{path}}")
@task(path=FILE_IN, returns=int)
def count(path):
    ...


@task(returns=int)
def square(n):
    return n * n


if __name__ == "__main__":
    src, dst = sys.argv[1], sys.argv[2]
    upper(src, dst, label="big " * 40)
    assert wait_on(count(dst)) == 0
    print(sum(wait_on([square(i) for i in range(3)])))
    wait_on_file(dst)
