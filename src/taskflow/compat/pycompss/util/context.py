"""``pycompss.util.context``: where the code runs (the master, a worker, a PyCOMPSs run)."""
from __future__ import annotations

from ....context import in_worker as _in_worker
from ....context import nest as _nest
from ....runtime import current

MASTER = "MASTER"
WORKER = "WORKER"
OUT_OF_SCOPE = "OUT_OF_SCOPE"


def in_worker() -> bool:
    """True inside a task."""
    return _in_worker()


def in_master() -> bool:
    """True in the application's main program while a run is on."""
    return not _in_worker() and current.get() is not None


def in_pycompss() -> bool:
    """True in a run (main program or task), as under runcompss."""
    return in_worker() or in_master()


def who_contextualized() -> str:
    return "taskflow"


def get_pycompss_context() -> str:
    return WORKER if in_worker() else MASTER if in_master() else OUT_OF_SCOPE


class _Context:
    """``CONTEXT`` as newer PyCOMPSs versions name it."""

    in_worker = staticmethod(in_worker)
    in_master = staticmethod(in_master)
    in_pycompss = staticmethod(in_pycompss)
    get_pycompss_context = staticmethod(get_pycompss_context)

    @staticmethod
    def is_nesting_enabled() -> bool:
        """True in a task whose calls of tasks are submitted (``--agents``), as in a
        PyCOMPSs agent's worker; False under plain runcompss (they run inline)."""
        return _in_worker() and _nest() is not None


CONTEXT = _Context()
