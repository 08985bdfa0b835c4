"""``pycompss.api.ompss``: ``@ompss(binary=..., computing_nodes=..., args=..., working_dir=...)``.

A threaded (OmpSs / OpenMP) program: it holds the ``computing_units`` of
``@constraint`` on each of ``computing_nodes`` nodes and sees
``OMP_NUM_THREADS`` / ``NX_ARGS``. Command line and exit code as ``@binary``.
"""
from __future__ import annotations

from typing import Any

from ....errors import UsageError
from ...external import attach_program, counts_per_call, fail_by_exit_value, normalize
from ...calls.taskfn import task_function

SUPPORTED = ("binary", "computing_nodes", "args", "params", "working_dir",
             "fail_by_exit_value")


class ompss:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kw = normalize("ompss", kwargs, SUPPORTED)
        if not kw.get("binary"):
            raise UsageError("@ompss: the binary argument is mandatory.")
        self.cfg = {"binary": kw["binary"], "computing_nodes": kw.get("computing_nodes", 1),
                    "args": kw.get("args", kw.get("params")),
                    "working_dir": kw.get("working_dir"),
                    "fail_by_exit_value": fail_by_exit_value(kw.get("fail_by_exit_value"),
                                                             "ompss")}

    def __call__(self, target: Any) -> Any:
        tf = task_function(target, "@ompss")
        return attach_program(tf, "ompss", "ompss", counts_per_call(tf, self.cfg))


OmpSs = ompss
Ompss = ompss
