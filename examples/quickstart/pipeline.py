"""A small taskflow pipeline: objects, files, a fan-out and a reduction.

    taskflow run examples/quickstart/pipeline.py [N]

It writes its report, quickstart-report.txt, where it is run.
"""
import sys

from taskflow import FILE_IN, FILE_OUT, INOUT, task, wait_on, wait_on_file


@task(returns=int)
def square(x: int) -> int:
    return x * x


@task(returns=int)
def total(values: list) -> int:
    return sum(values)


@task(out=FILE_OUT)
def write_report(out: str, value: int) -> None:
    with open(out, "w") as f:
        f.write(f"sum of squares = {value}\n")


@task(returns=int, path=FILE_IN)
def count_chars(path: str) -> int:
    with open(path) as f:
        return len(f.read())


@task(log=INOUT)
def note(log: list, line: str) -> None:
    log.append(line)


def main(n: int) -> None:
    squares = [square(i) for i in range(n)]          # n independent tasks
    s = total(squares)                               # waits for all of them
    out = "quickstart-report.txt"
    write_report(out, s)                             # a file written by a task
    chars = count_chars(out)                         # ...and read by another
    log: list = []
    note(log, "started")
    note(log, "done")                                # INOUT: ordered updates
    print("sum of squares:", wait_on(s))
    print("report has", wait_on(chars), "characters; log:", wait_on(log))
    wait_on_file(out)
    with open(out) as f:
        print("report at", out, "->", f.read().strip())


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 100)
