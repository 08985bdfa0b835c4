"""``@workflow``: a whole taskflow script run as one task (a nested run).

Order: ``@constraint`` -> ``@workflow`` -> ``@task``::

    @constraint(computing_units=4)
    @workflow(script="sub/analysis.py", args="--input {{path}}", computing_nodes=1)
    @task(returns=int, path=FILE_IN)
    def analysis(path): ...

A call runs ``taskflow run --workers N <script> <args>`` on the node the
task is placed on, where N is the computing units it holds there: the
nested run's nodes are exactly the task's (with ``computing_nodes`` > 1,
those nodes, reached over SSH). ``args`` is a template as for ``@binary``
(``{{name}}``: a parameter), ``working_dir`` the directory it runs in
(created if missing), ``flags`` more ``taskflow run`` options. The nested
run keeps its journal under ``<this run's directory>/nested/``, its run id is
``<this run id>-t<task id>`` and the task's log says how to see it. The
task's value is the nested run's exit status; by default a non-zero one
fails the task (``fail_by_exit_value``). PyCOMPSs's ``@compss`` is this
decorator.
"""
from __future__ import annotations

from typing import Any, Callable

from ..errors import UsageError
from .external import attach, check_arguments
from .task import TaskFunction

MANDATORY = ("script",)
SUPPORTED = ("args", "computing_nodes", "working_dir", "flags", "fail_by_exit_value")


def workflow(script: str | None = None, args: str | None = None,
             computing_nodes: int | str = 1, working_dir: str | None = None,
             flags: str | None = None, fail_by_exit_value: bool = True,
             **others: object) -> Callable[..., Any]:
    """Declare that the task below runs ``script`` as a nested taskflow run.

    Example::

        from taskflow import task, wait_on, workflow

        with open("inner.py", "w") as f:
            f.write("import sys\\nprint('inner run of', sys.argv[1])\\n")

        @workflow(script="inner.py", args="{{n}}")
        @task(returns=int)
        def inner(n: int) -> int: ...

        print(wait_on(inner(3)))                          # 0: the nested run finished
    """
    check_arguments("workflow", dict(others, script=script), MANDATORY, SUPPORTED)
    return lambda target: attach_workflow(target, script or "", args=args,
                                          computing_nodes=computing_nodes,
                                          working_dir=working_dir, flags=flags,
                                          fail_by_exit_value=fail_by_exit_value)


def attach_workflow(target: Any, script: str, *, args: str | None, computing_nodes: Any,
                    working_dir: str | None, flags: str | None, fail_by_exit_value: bool,
                    compat: bool = False, bash_words: bool = False) -> TaskFunction:
    if not isinstance(script, str) or not script:
        raise UsageError(f"@workflow: script must be the path of a script, not {script!r}.")
    cfg = {"script": script, "args": args, "computing_nodes": computing_nodes,
           "working_dir": working_dir, "flags": flags,
           "fail_by_exit_value": fail_by_exit_value, "compat": compat,
           "bash_words": bash_words}
    tf = attach(target, "workflow", cfg)
    return tf
