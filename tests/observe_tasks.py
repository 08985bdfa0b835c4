"""Task functions for the journal / observe / monitor tests (importable by workers)."""
from __future__ import annotations

import os
import sys
import time

from taskflow import task


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


@task()
def loud(n):
    for i in range(n):
        print(i)
