"""Task functions for the SSH tests (importable on the namespace hosts: shared filesystem)."""
from __future__ import annotations

import os
import socket
import time

from taskflow import FILE_IN, FILE_INOUT, FILE_OUT, constraint, task


@task(returns=2)
def where(delay):
    time.sleep(delay)
    return socket.gethostname(), os.getcwd()


@task(src=FILE_IN, dst=FILE_OUT, returns=2)
def upper(src, dst):
    with open(src) as f:
        text = f.read()
    with open(dst, "w") as f:
        f.write(text.upper())
    return socket.gethostname(), (src, dst)


@task(f=FILE_INOUT, returns=str)
def append_host(f):
    with open(f, "a") as fh:
        fh.write(f"+{socket.gethostname()}\n")
    return f


@task(src=FILE_IN, returns=str)
def read_text(src):
    with open(src) as f:
        return f.read()


@task(returns=bytes)
def big(i, delay=0.0):
    time.sleep(delay)
    return bytes([i % 256]) * (1 << 20)          # 1 MiB: stays on the node that made it


@task(returns=int)
def checksum(b, delay=0.0):
    time.sleep(delay)
    return len(b) * b[0]


@task(returns=int)
def first_bytes(a, b, c):
    return a[0] + b[0] + c[0]


@task(returns=int)
def slow_square(x, delay):
    time.sleep(delay)
    return x * x


@task(returns=int)
def marked(i, plan, marks):
    """``start I HOST`` and ``end I HOST`` appended to ``marks`` (the link-flap tests); it
    sleeps ``plan[HOST][K]`` s when it is the K-th task to start on HOST (the same for
    whichever task the placement put there), ``plan["again"]`` beyond."""
    import fcntl
    host = socket.gethostname()
    with open(marks, "a+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        f.write(f"start {i} {host}\n")
        f.flush()
        f.seek(0)
        k = sum(1 for line in f if line.startswith("start ") and line.split()[2] == host)
    secs = plan[host][k - 1] if k <= len(plan[host]) else plan["again"]
    time.sleep(secs)
    with open(marks, "a") as f:
        f.write(f"end {i} {host}\n")
    return i * 10


@task(returns=str)
def hostname():
    return socket.gethostname()


@task(returns=int)
def noop(x):
    return x


try:
    from taskflow import mpi as _mpi
except ImportError:       # @mpi not there yet
    _mpi = None

if _mpi is not None:
    _TB = os.environ.get("TF_TB", "/tmp/taskflow-tb")
    _FLAGS = (f"--mca plm_rsh_agent {_TB}/ssh/ssh-wrap --mca oob_tcp_if_include 10.200.0.128/26 "
              f"--mca btl_tcp_if_include 10.200.0.128/26 --mca btl self,tcp")

    @_mpi(runner="mpirun", processes=4, processes_per_node=2, flags=_FLAGS)
    @task(returns=list)
    def mpi_allreduce(x):
        from mpi4py import MPI
        comm = MPI.COMM_WORLD
        total = comm.allreduce(x * (comm.Get_rank() + 1))
        hosts = comm.gather(socket.gethostname())
        return [total, sorted(hosts) if comm.Get_rank() == 0 else None]


@constraint(resources={"license": 1})
@task(returns=2)
def licensed():
    return socket.gethostname(), os.environ.get("TASKFLOW_RESOURCES")


@constraint(resources={"gpu": 0.5})
@task(returns=2)
def half_gpu():
    return socket.gethostname(), os.environ.get("CUDA_VISIBLE_DEVICES")
