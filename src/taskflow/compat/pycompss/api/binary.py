"""``pycompss.api.binary``: ``@binary(binary=..., args=..., working_dir=..., fail_by_exit_value=...)``.

Above ``@task``. ``params`` is the older spelling of ``args``, ``workingDir``
of ``working_dir``. As in COMPSs, each parameter value is one argument of the
program (COMPSs escapes its spaces before ``bash -c``): only the blanks of the
``args`` template separate arguments, and the template is read as bash reads
a command line (quotes, ``$VAR`` from the launch environment, unquoted
globs, redirections ``> f`` ``2>&1`` ``< f`` as the program's streams),
without a shell (:mod:`taskflow.wire.template`); pipes and lists in the
template (``|``, ``;``...) are refused when the task is declared (use
``FILE_OUT_STDOUT`` and friends, or a wrapper script). Without ``returns`` the
call gives ``None``; with ``returns=int`` the exit code. A non-zero exit code
fails the task unless ``fail_by_exit_value=False``. An argument PyCOMPSs does
not know is warned about and ignored; ``engine`` / ``image`` (PyCOMPSs's older
way to run the binary in a container) are a ``@container`` above it.
"""
from __future__ import annotations

from typing import Any

from ....api.container import container as native_container
from ....errors import UsageError
from ...external import attach_program, fail_by_exit_value, normalize

SUPPORTED = ("binary", "args", "params", "working_dir", "fail_by_exit_value", "engine",
             "image")


class binary:  # noqa: N801 - PyCOMPSs's name
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kw = normalize("binary", kwargs, SUPPORTED)
        self.in_container: Any = None
        if "engine" in kw or "image" in kw:     # PyCOMPSs's older spelling of @container
            self.in_container = native_container(kw.pop("engine", None),
                                                 kw.pop("image", None))
        if not kw.get("binary"):
            raise UsageError("@binary: the binary argument is mandatory.")
        if "params" in kw:
            if "args" in kw:
                raise UsageError("@binary: give args (params is its older spelling), not both.")
            kw["args"] = kw.pop("params")
        self.cfg = {"binary": kw["binary"], "args": kw.get("args"),
                    "working_dir": kw.get("working_dir"),
                    "fail_by_exit_value": fail_by_exit_value(kw.get("fail_by_exit_value"),
                                                             "binary")}

    def __call__(self, target: Any) -> Any:
        tf = attach_program(target, "binary", "binary", self.cfg)
        return tf if self.in_container is None else self.in_container(tf)


Binary = binary
