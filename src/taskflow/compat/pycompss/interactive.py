"""``pycompss.interactive``: PyCOMPSs in a notebook, on taskflow's runtime.

``start(...)`` starts the run (taskflow's runtime with the local machine's
cores, or the one ``taskflow run --compat pycompss`` started; in a Jupyter
kernel, as ``taskflow.start()`` does there: the run's line, live progress per
cell, interrupts and the kernel's end: :mod:`taskflow.notebook.session`) and ``stop()``
waits for every task and stops it, as PyCOMPSs's ``start`` / ``stop`` do. The
runtime options of PyCOMPSs's ``start`` (tracing, monitoring, project and
resources files, storage...) are accepted and have no effect here, except
``storage_impl`` / ``storage_conf``: persistent storage is not supported.
"""
from __future__ import annotations

from typing import Any

from ..unsupported import NotSupported

_STARTED_HERE = False


def start(*args: Any, **kwargs: Any) -> None:
    """Start the run if none is on (PyCOMPSs's ``interactive.start``)."""
    global _STARTED_HERE
    if kwargs.get("storage_impl") or kwargs.get("storage_conf"):
        raise NotSupported("pycompss.interactive.start(storage_impl=/storage_conf=): "
                           "persistent storage is not supported by taskflow's PyCOMPSs layer "
                           "(docs/compat-pycompss.md).")
    from ...notebook.session import kernel_shell
    from ...runtime import current, embedded
    if current.get() is not None:
        return          # taskflow run --compat pycompss started it, or start() did
    _STARTED_HERE = True
    if kernel_shell() is not None:          # in Jupyter: what taskflow.start() does there
        from ... import start as tf_start
        tf_start()
    else:
        embedded.get_or_start()


def stop(*args: Any, sync: bool = False, **kwargs: Any) -> None:
    """Wait for every task; stop the run if :func:`start` started it."""
    global _STARTED_HERE
    from ... import stop as tf_stop
    from ...api import sync as S
    from ...runtime import current
    if current.get() is None:
        return
    S.barrier()
    if _STARTED_HERE:
        _STARTED_HERE = False
        tf_stop()


__all__ = ["start", "stop"]
