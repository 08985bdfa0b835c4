"""Tasks whose calls may run in their parent's executor (agent/executor/runhere.py),
importable by the master and the workers. Each parent first calls its child once and
waits (dispatched: its duration on the executor is known then); on one slot that run is
on the parent's own executor, so the next calls of a short child may run there."""
from __future__ import annotations

import time

from taskflow import task, wait_on


@task(returns=1)
def leaf(i):
    return i * i


@task(returns=1)
def chatty(i):
    print(f"line of chatty {i}")
    return i


@task(returns=1)
def maybe_fails(i):
    if i == 7:
        raise ValueError(f"call {i} is broken")
    return i


@task(returns=1, time_out=60)
def with_an_option(i):
    return i + 1000


@task(returns=1)
def calls_one_with_an_option(i):
    """Runs here; its own call has an option (time_out): dispatched, and waited for."""
    return wait_on(with_an_option(i))


@task(returns=1)
def barrier_after_an_option(i):
    """Runs here; its barrier waits for the call it sent (not for itself: no deadlock)."""
    from taskflow import barrier
    x = with_an_option(i)
    barrier()
    return wait_on(x)


@task(returns=1)
def big(i):
    return bytes([i]) * (3 * 2**20)


@task(returns=1)
def big_twice(i):
    """big(i) runs here (its value, 3 MiB, goes to the master), then big is dispatched."""
    a = wait_on(big(i))
    b = wait_on(big(i + 1))
    return [len(a), a[:1], len(b), b[:1]]


@task(returns=1)
def slow(s):
    time.sleep(s)
    return s


@task(returns=1)
def warm_then(child_name, args):
    """``child_name``'s first call dispatched and waited for, then a call per ``args`` (the
    last one may run here), all waited for: their values, or the error's text."""
    child = globals()[child_name]
    first = wait_on(child(args[0]))
    kids = [child(a) for a in args[1:]]
    try:
        return [first] + list(wait_on(*kids)) if len(kids) > 1 else [first, wait_on(kids[0])]
    except Exception as exc:  # noqa: BLE001 - what the parent sees of its child
        return f"{type(exc).__name__}: {exc}"
