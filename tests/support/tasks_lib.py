"""Task functions shared by the core tests (importable by the workers)."""
from __future__ import annotations

import os
import time

from taskflow import (COLLECTION_IN, COLLECTION_INOUT, COLLECTION_OUT, CONCURRENT, Depth,
                      DIRECTORY_OUT, DIRECTORY_IN, FILE_IN, FILE_INOUT, FILE_OUT, INOUT, OUT,
                      Type, task)


@task(returns=int)
def inc(x):
    return x + 1


@task(returns=int)
def add(a, b):
    return a + b


@task(returns=2)
def divmod_task(a, b):
    return divmod(a, b)


@task()
def ident(x):
    return x


@task(returns=int)
def total(values):
    return sum(values)


@task(lst=INOUT)
def append(lst, v):
    lst.append(v)


@task(d=INOUT)
def set_key(d, k, v):
    d[k] = v


@task(returns=list)
def read_list(lst):
    return list(lst)


def rendezvous(me: str, other: str, folder: str, timeout: float = 30.0) -> bool:
    """Signal ``me`` and wait for ``other``: True only if both ran at the same time."""
    open(os.path.join(folder, me), "w").close()
    deadline = time.time() + timeout
    while time.time() < deadline:
        if os.path.exists(os.path.join(folder, other)):
            return True
        time.sleep(0.01)
    return False


@task(lst=INOUT, returns=bool)
def append_meeting(lst, v, me, other, folder):
    lst.append(v)
    return rendezvous(me, other, folder)


@task(returns=bool)
def read_meeting(lst, me, other, folder):
    return rendezvous(me, other, folder)


@task(out=FILE_OUT)
def write_file(out, text):
    with open(out, "w") as f:
        f.write(text)


@task(out=FILE_OUT, returns=bool)
def write_file_meeting(out, text, me, other, folder):
    ok = rendezvous(me, other, folder)
    with open(out, "w") as f:
        f.write(text)
    return ok


@task(src=FILE_IN, returns=str)
def read_file(src):
    with open(src) as f:
        return f.read()


@task(src=FILE_IN, returns=str)
def read_file_meeting(src, me, other, folder):
    ok = rendezvous(me, other, folder)
    with open(src) as f:
        return f.read() + ("|met" if ok else "|alone")


@task(f=FILE_INOUT)
def append_file(f, text):
    with open(f, "a") as fh:
        fh.write(text)


@task(out=DIRECTORY_OUT)
def make_dir(out, n):
    for i in range(n):
        with open(os.path.join(out, f"part{i}.txt"), "w") as f:
            f.write(str(i))


@task(d=DIRECTORY_IN, returns=list)
def list_dir(d):
    return sorted(os.listdir(d))


@task(items=COLLECTION_IN, returns=int)
def sum_collection(items):
    return sum(items)


@task(items={Type: COLLECTION_IN, Depth: 2}, returns=int)
def sum_nested(items):
    return sum(sum(x) for x in items)


@task(items=COLLECTION_INOUT)
def bump_all(items):
    for it in items:
        it.append(len(it))


@task(items=COLLECTION_OUT)
def fill_all(items):
    for i, it in enumerate(items):
        it.clear()
        it.append(i * 10)


@task(items=COLLECTION_OUT)
def assign_all(items):
    for i in range(len(items)):
        items[i] = [i] * (i + 1)        # the element replaced, not changed in place


@task(items={Type: COLLECTION_INOUT, Depth: 2})
def assign_nested(items):
    items[0][0] = "new"
    items[1].append(len(items[1]))


@task(lst=CONCURRENT)
def concurrent_touch(lst, me, other, folder):
    rendezvous(me, other, folder)
    lst.append(me)


@task(x=OUT)
def fill_out(x):
    x.clear()
    x.update({"filled": True})


@task(returns=int)
def fail_if(x, bad):
    if x == bad:
        raise ValueError(f"bad value {x}")
    return x


@task(returns=int, on_failure="FAIL")
def fail_now(x):
    raise KeyError(f"no such key {x}")


@task(returns=int, on_failure="IGNORE")
def fail_ignored(x):
    raise RuntimeError("ignored failure")


@task(returns=int, on_failure="CANCEL_SUCCESSORS")
def fail_cancel(x):
    raise RuntimeError("cancel my successors")


@task(returns=int)
def none_or_value(x):
    return -1 if x is None else x


class UnprintableError(Exception):
    def __str__(self):
        raise RuntimeError("no text for this one")


@task(returns=int)
def raise_unprintable(x):
    raise UnprintableError(x)


@task(returns=int)
def fail_counted(marker_dir):
    """Always fails; leaves one file per attempt in ``marker_dir`` (no retries of its own)."""
    n = len(os.listdir(marker_dir))
    open(os.path.join(marker_dir, f"attempt{n}"), "w").close()
    raise ValueError(f"attempt {n} fails")


@task(returns=int, on_failure="RETRY", retries=2)
def flaky(marker_dir, fail_times):
    """Fails ``fail_times`` times (counted with files), then succeeds."""
    n = len(os.listdir(marker_dir))
    open(os.path.join(marker_dir, f"attempt{n}"), "w").close()
    if n < fail_times:
        raise RuntimeError(f"attempt {n} fails")
    return n


@task(returns=str)
def where_am_i(_):
    return os.environ.get("TASKFLOW_NODE_NAME", "") or str(os.getppid())


@task(returns=int, time_out=1, on_failure="FAIL")
def sleepy(s):
    time.sleep(s)
    return 1


@task(returns=float)
def sleep_for(s):
    time.sleep(s)
    return s


@task(returns=int)
def printer(n):
    print(f"hello from task {n}")
    import sys
    print(f"error line {n}", file=sys.stderr)
    return n


@task(returns=int)
def kill_my_node(marker):
    """First run: kill this node agent (and so this executor). Later runs: succeed."""
    import signal
    if not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getppid(), signal.SIGKILL)
        os.kill(os.getpid(), signal.SIGKILL)
    return 42


@task(returns=int)
def big_result(n):
    return n


@task(returns=bytes)
def make_blob(n):
    return b"x" * n


@task(returns=int)
def blob_len(b):
    return len(b)


@task(returns=int, retries=1)
def flaky_add(marker_dir, x):
    """Fails on its first attempt (counted with files), then returns x + 100."""
    n = len(os.listdir(marker_dir))
    open(os.path.join(marker_dir, f"attempt{n}"), "w").close()
    if n == 0:
        raise RuntimeError("first attempt fails")
    return x + 100


@task(returns=int, on_failure="FAIL")
def fail_on(x, bad):
    if x == bad:
        raise ValueError(f"chain broken at {x}")
    return x + 1


@task(returns=bytes)
def mib(i):
    return bytes([i % 256]) * (1 << 20)


@task(returns=int)
def sample_sum(b):
    return sum(b[::4096])


@task(returns=1)
def nap_marked(i, pause, marker_dir):
    """Leave ``<marker_dir>/<agent pid>.<i>.<this pid>`` at start; return (i, agent pid)."""
    open(os.path.join(marker_dir, f"{os.getppid()}.{i}.{os.getpid()}"), "w").close()
    time.sleep(pause)
    return i, os.getppid()
