"""Task functions of the memory tests (importable by the workers)."""
from __future__ import annotations

import os
import time

from taskflow import INOUT, FILE_OUT, task


@task(returns=bytes)
def blob(n, fill=1):
    """``n`` bytes of ``fill``: large ones stay on the node that made them."""
    return bytes([fill % 256]) * n


@task(returns=int)
def checksum(b):
    return len(b) + (b[0] if b else 0) + (b[-1] if b else 0)


@task(returns=bytes)
def grow(b, extra):
    return b + bytes([extra % 256]) * 1024


@task(returns=int)
def stamp(b, pause=0.0):
    """When a consumer of ``b`` started (and ``b`` is whole)."""
    t = time.time()
    if pause:
        time.sleep(pause)
    assert len(b) >= 1
    return int(t * 1e6)


@task(returns=int)
def source_stamp(i, n, pause=0.0):
    """A producer that says when it started."""
    t = time.time()
    if pause:
        time.sleep(pause)
    return int(t * 1e6)


@task(lst=INOUT)
def append_to(lst, v):
    lst.append(v)


@task(out=FILE_OUT)
def write_text(out, text):
    with open(out, "w") as f:
        f.write(text)


@task(returns=int, on_failure="IGNORE")
def fails(x):
    raise ValueError(f"no {x}")


@task(returns=int)
def agent_pid(_):
    return os.getppid()


@task(returns=bytes)
def alloc_and_hold(mb):
    """Grow this executor by ``mb`` MB (touched pages) and give back a little."""
    buf = bytearray(mb * 2**20)
    for i in range(0, len(buf), 4096):
        buf[i] = 1
    return bytes(buf[:16])
