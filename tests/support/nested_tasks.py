"""Tasks that call tasks (nested submission), importable by the master and the workers."""
from __future__ import annotations

import threading
import time

from taskflow import FILE_INOUT, FILE_OUT, task, wait_on


@task(returns=1)
def fib(n):
    if n < 2:
        return n
    a, b = fib(n - 1), fib(n - 2)
    x, y = wait_on(a, b)
    return x + y


@task(returns=1)
def square(i, delay=0.0):
    time.sleep(delay)
    return i * i


@task(returns=1)
def fan_out(k, n, delay=0.0):
    """Decides at run time how many children to make, then waits for them all."""
    parts = [square(k * 100 + i, delay) for i in range(n)]
    return wait_on(parts)


@task(returns=1)
def fails(i):
    raise ValueError(f"child {i} is broken")


@task(returns=1)
def waits_for_a_failing_child():
    ok = square(3)
    bad = fails(7)
    return wait_on(ok) + wait_on(bad)


@task(returns=1)
def catches_its_child():
    try:
        wait_on(fails(1))
    except Exception as exc:        # noqa: BLE001 - what the parent sees of its child
        return f"{type(exc).__name__}: {exc}"
    return "no error"


@task(returns=1)
def sleeper(s):
    time.sleep(s)
    return s


@task(returns=1)
def calls_then_fails():
    for _ in range(3):
        sleeper(30.0)
    time.sleep(0.5)
    raise RuntimeError("the parent gives up")


@task(returns=1)
def chain_in_a_task(n):
    x = 0
    for _ in range(n):
        x = add_one(x)
    return wait_on(x)


@task(returns=1)
def add_one(x):
    return x + 1


@task(returns=1)
def calls_from_a_thread():
    out = {}

    def body():
        try:
            out["v"] = square(2)
        except Exception as exc:      # noqa: BLE001
            out["e"] = f"{type(exc).__name__}: {exc}"

    th = threading.Thread(target=body)
    th.start()
    th.join()
    return out.get("e", "no error")


@task(returns=2)
def big_from(i, delay):
    """A 1 MiB value (above the inline size: it stays on its node) and where it was made."""
    import socket
    time.sleep(delay)
    return bytes([i]) * (1 << 20), socket.gethostname()


@task(returns=2)
def spreads(n, delay):
    """Calls ``n`` children, waits; (its host, [(child's host, child's value checksum)])."""
    import socket
    calls = [big_from(i, delay) for i in range(n)]
    got = wait_on(calls)
    return socket.gethostname(), [(host, sum(value)) for value, host in got]


@task(returns=1)
def calls_sleepers_once(marker):
    """First run: two 30 s children, waited for; a run after that (its node was lost):
    says so at once."""
    import os
    if os.path.exists(marker):
        return "ran again"
    open(marker, "w").close()
    return wait_on([sleeper(30.0), sleeper(30.0)])


@task(returns=1)
def in_batches(n, batch, gate):
    """Calls ``n`` children, ``batch`` at a time, waiting for each batch and dropping its
    handles; then waits for ``gate`` to exist (the test looks at the master meanwhile)."""
    import os
    total = 0
    for k in range(0, n, batch):
        total += sum(wait_on([square(i) for i in range(k, min(n, k + batch))]))
    square(0)                   # (the last batch's handles are dropped: told with this call)
    while not os.path.exists(gate):
        time.sleep(0.02)
    return total


@task(returns=1)
def forgets_then_barrier(n):
    """Calls without keeping the handles (one of them fails), then a barrier: the barrier
    waits for every call and raises the failed one's error."""
    from taskflow import barrier
    for i in range(n):
        square(i, 0.01)
    fails(5)
    for i in range(n):
        square(i)
    barrier()
    return "no error"


@task(path=FILE_OUT)
def writes(path, text):
    with open(path, "w") as f:
        f.write(text)


@task(returns=1)
def leaves_a_child(path, text):
    """Calls a child that writes ``path`` and returns at once, leaving it running."""
    writes(path, text)
    return text


@task(path=FILE_INOUT)
def appends(path, text):
    with open(path, "a") as f:
        f.write(text)


@task(returns=1)
def reads_what_its_children_wrote(path):
    """Two children write the file in turn; the parent reads it after wait_on_file, then
    once more through taskflow.open after a third child appended."""
    import taskflow
    from taskflow import wait_on_file
    writes(path, "one\n")
    appends(path, "two\n")
    wait_on_file(path)
    with open(path) as f:
        first = f.read()
    appends(path, "three\n")
    with taskflow.open(path) as f:
        second = f.read()
    return first, second


@task(returns=1)
def waits_for_a_file_nobody_writes(path):
    from taskflow import wait_on_file
    try:
        wait_on_file(path)
    except Exception as exc:        # noqa: BLE001 - what the parent sees
        return f"{type(exc).__name__}: {exc}"
    return "no error"


@task(returns=1)
def touch(path):
    open(path, "w").close()
    return path


@task(returns=1)
def calls_then_computes(path, seconds):
    """Calls ``touch(path)`` and computes on without waiting for it (no other call, no
    wait, no output) until the file exists: True if it came within ``seconds``."""
    import os
    touch(path)
    deadline = time.monotonic() + seconds
    while not os.path.exists(path) and time.monotonic() < deadline:
        sum(range(1000))
    return os.path.exists(path)
