"""``pycompss.api.compss``: ``@compss(app_name=..., runcompss=..., flags=..., computing_nodes=...)``.

A whole PyCOMPSs application run as one task: a nested
``taskflow run --compat pycompss`` of ``app_name`` whose nodes are exactly
the slots the task holds (``computing_units`` of ``@constraint`` on each of
``computing_nodes`` nodes), in ``working_dir``, with ``flags`` (runcompss
options) and ``args``. Its exit code is the task's value; the task's log
names the nested run. ``runcompss`` (the launcher's path) and
``worker_in_master`` are accepted: taskflow is the launcher. taskflow's own
spelling is ``taskflow.workflow(script=..., args=..., computing_nodes=...,
working_dir=...)``.
"""
from __future__ import annotations

from typing import Any

from ....api.workflow import attach_workflow
from ....errors import UsageError
from ...external import counts_per_call, fail_by_exit_value, normalize
from ...calls.taskfn import task_function

SUPPORTED = ("app_name", "runcompss", "flags", "computing_nodes", "working_dir", "args",
             "fail_by_exit_value", "worker_in_master")


class compss:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kw = normalize("compss", kwargs, SUPPORTED)
        if not kw.get("app_name"):
            raise UsageError("@compss: the app_name argument is mandatory (the application's "
                             "path).")
        self.kw = kw

    def __call__(self, target: Any) -> Any:
        tf = task_function(target, "@compss")
        kw = counts_per_call(tf, self.kw)
        attach_workflow(tf, kw["app_name"], args=kw.get("args"),
                        computing_nodes=kw.get("computing_nodes", 1),
                        working_dir=kw.get("working_dir"), flags=kw.get("flags"),
                        fail_by_exit_value=fail_by_exit_value(kw.get("fail_by_exit_value"),
                                                              "compss"),
                        compat=True, bash_words=True)
        recorded = {k: str(kw[k]) for k in ("runcompss", "worker_in_master") if k in kw}
        if recorded:
            tf.spec.record_hints(**recorded)
        return tf


COMPSs = compss
Compss = compss
