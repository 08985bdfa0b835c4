"""taskflow: task-based workflows for clusters and HPC machines, in pure Python.

Decorate functions with ``@task``; calling them records tasks and returns
futures; ``wait_on`` gives values back. See README.md.
"""
from __future__ import annotations

__version__ = "0.1.0"

from .api.binary import binary
from .api.constraint import constraint
from .api.mpi import mpi
from .api.multinode import multinode
from .api.ompss import ompss
from .api.parameter import (
    COLLECTION, COLLECTION_FILE_IN, COLLECTION_FILE_INOUT, COLLECTION_FILE_OUT, COLLECTION_IN,
    COLLECTION_INOUT, COLLECTION_OUT, COMMUTATIVE, CONCURRENT, DIRECTORY, DIRECTORY_IN,
    DIRECTORY_INOUT, DIRECTORY_OUT, FILE, FILE_COMMUTATIVE, FILE_CONCURRENT, FILE_IN,
    FILE_IN_STDIN, FILE_INOUT, FILE_INOUT_STDERR, FILE_INOUT_STDOUT, FILE_OUT, FILE_OUT_STDERR,
    FILE_OUT_STDOUT, IN, IN_DELETE, INOUT, OUT, STDERR, STDIN, STDOUT, Depth, Direction, Keep,
    Param, Prefix, StdIOStream, Type, Weight)
from .api.sync import (
    TaskGroup, barrier, barrier_group, delete_file, delete_object, file_exists,
    number_of_resources, open, wait_on, wait_on_directory, wait_on_file)
from .api.task import task
from .errors import (NodeLost, TaskCancelled, TaskError, TaskflowError, TaskTimeout,
                     UsageError)
from .future import Future
from .invokers.process import ProgramFailed
from .runtime.runtime import Runtime

# on_failure values, importable like the direction constants.
RETRY, FAIL, IGNORE, CANCEL_SUCCESSORS = "RETRY", "FAIL", "IGNORE", "CANCEL_SUCCESSORS"


def start(workers: int | None = None, **kwargs) -> Runtime:
    """Start a runtime explicitly (notebooks, tests); ``stop()`` ends it."""
    from .runtime import current
    rt = current.get()
    if rt is not None:
        raise RuntimeError("a taskflow runtime is already running; call taskflow.stop() first")
    return Runtime(workers=workers, **kwargs).start()


def stop(wait: bool = True) -> None:
    """Wait for all tasks (unless ``wait=False``) and stop the current runtime."""
    from .runtime import current
    rt = current.get()
    if rt is not None:
        rt.stop(wait=wait)


def current_runtime() -> Runtime | None:
    from .runtime import current
    return current.get()


__all__ = [n for n in dir() if not n.startswith("_") and n not in ("annotations",)]
