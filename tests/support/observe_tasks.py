"""Task functions for the journal / observe / monitor tests (importable by workers)."""
from __future__ import annotations

import os
import sys
import time

from taskflow import constraint, task


@task(returns=int)
def chatty(n):
    for i in range(n):
        print(f"out {i}")
        print(f"err {i}", file=sys.stderr)
    return n


@task(returns=int)
def add(a, b):
    return a + b


@task(returns=int)
def boom(x):
    print("about to fail")
    raise ValueError(f"boom {x}")


@task(returns=str)
def flaky(marker):
    """Fails on its first attempt (leaves ``marker`` behind), succeeds on the second."""
    if not os.path.exists(marker):
        open(marker, "w").close()
        raise RuntimeError("first attempt fails")
    return "ok"


@task(returns=float)
def nap(seconds, *deps):
    time.sleep(seconds)
    print(f"slept {seconds}")
    return seconds


@task(returns=str)
def hold_until(path, limit=120.0):
    """Runs until ``path`` exists (the test says when), at most ``limit`` s."""
    t0 = time.time()
    while not os.path.exists(path) and time.time() - t0 < limit:
        time.sleep(0.05)
    print(f"released by {os.path.basename(path)}")
    return path


@task()
def loud(n):
    for i in range(n):
        print(i)


@constraint(computing_units=2)
@task(returns=float)
def wide_nap(seconds, *deps):
    """Holds both slots of a 2-slot node while it sleeps."""
    time.sleep(seconds)
    return seconds


def named(name: str):
    """A sleeping task function called ``name`` (many task names in one run)."""
    def body(seconds):
        time.sleep(seconds)
        return seconds
    body.__name__ = body.__qualname__ = name
    return task(returns=float)(body)


@task(returns=int)
def burn(seconds, megabytes):
    """Keeps a core busy for ``seconds`` while it holds ``megabytes`` of memory."""
    block = bytearray(megabytes * 2**20)
    for i in range(0, len(block), 4096):
        block[i] = 1                              # touched: resident
    end = time.process_time() + seconds
    n = 0
    while time.process_time() < end:
        n += 1
    return len(block) + n * 0


@task(returns=int)
def noop(x):
    return x
