"""Tasks for tests/node/test_shared_values.py: large arrays between executors."""
from __future__ import annotations

import os

from taskflow import task


@task()
def ramp(n, limit_bytes=0):
    """A float64 array 0..n-1; ``limit_bytes``: first, this executor may write no file
    larger than that (RLIMIT_FSIZE: its shared file cannot be written whole)."""
    import numpy as np
    if limit_bytes:
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
    return np.arange(n, dtype=np.float64)


@task(returns=tuple)
def where_and_sum(a, zero=False):
    """(this executor's pid, the sum of ``a``; ``zero``: after zeroing it in place)."""
    if zero:
        a[:] = 0.0
    return os.getpid(), float(a.sum())
