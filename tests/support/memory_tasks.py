"""Task functions of the memory tests (importable by the workers)."""
from __future__ import annotations

import os
import time

from taskflow import FILE_OUT, INOUT, constraint, task


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


@task(returns=bytes)
def made_at(i, n, pause=0.0):
    """A value of ``n`` bytes whose first 8 bytes say when it was made (microseconds)."""
    if pause:
        time.sleep(pause)
    t = int(time.time() * 1e6)
    return t.to_bytes(8, "little") + bytes([i % 256]) * (n - 8)


@task(returns=tuple)
def used_at(b):
    """(when the value was made, when this consumer started)."""
    return int.from_bytes(b[:8], "little"), int(time.time() * 1e6)


@task(returns=int)
def busy(seconds):
    time.sleep(seconds)
    return 0


@task(returns=int)
def started(_i):
    return int(time.time() * 1e6)


@task(returns=int, priority=True)
def started_first(_i):
    return int(time.time() * 1e6)


@task(returns=float)
def zero_then_sum(a):
    """Changes its input in place: no other reader may see that."""
    a[:] = 0
    return float(a.sum())


@task(returns=float)
def total(a):
    return float(a.sum())


@task()
def ones(n):
    import numpy as np
    return np.ones(n)


@task()
def grow_array(a):
    return a + 1.0


@constraint(memory_size=0.25, memory_limit=True)
@task(returns=int)
def allocate_limited(mb):
    """Allocate and touch ``mb`` MB under a 0.25 GB limit."""
    import numpy as np
    a = np.ones(mb * 2**20 // 8)
    return int(a.nbytes)


@constraint(memory_size=0.25)
@task(returns=int)
def allocate_sized(mb):
    """The same with memory_size only: a limit only when the run says so."""
    import numpy as np
    a = np.ones(mb * 2**20 // 8)
    return int(a.nbytes)


@task(returns=bytes)
def big_slow(i, mb, pause=0.1):
    time.sleep(pause)
    return bytes([i % 256]) * (mb * 2**20)


@task(returns=list)
def heads(*values):
    return [(len(v), v[0], v[-1]) for v in values]
