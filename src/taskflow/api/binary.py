"""``@binary``: the task runs an executable instead of its Python body.

Order: ``@constraint`` -> ``@binary`` -> ``@task``. The command is an argv
list, never a shell string. Without ``args`` the task's parameters are
appended in order; with ``args="-i {{infile}} -n {{n}}"`` the template is
split on whitespace and each ``{{name}}`` replaced by that parameter's value
(a value with spaces stays one argv entry). Stream parameters
(``FILE_IN_STDIN``, ``FILE_OUT_STDOUT``, ...) are wired to the process and
never appear on argv. ``$VAR`` in the decorator values expands from the
master's environment when the task is called.

The result is the exit code. With ``fail_by_exit_value=True`` (the default)
a non-zero exit code is a task failure that follows ``on_failure``.

The task ends when the program exits; background processes it started in its
process group get SIGTERM then (``sleep 30 &`` does not hold the task up).
``keep_background=True`` leaves them running (the task's log names them);
they end with the run.
"""
from __future__ import annotations

from typing import Any, Callable

from .external import attach, check_arguments

MANDATORY = ("binary",)
SUPPORTED = ("args", "working_dir", "fail_by_exit_value", "keep_background")
DEPRECATED = ("workingDir", "engine", "image")   # PyCOMPSs spellings not supported here
FAIL_BY_EXIT_VALUE = True


def binary(binary: str | None = None, args: str | None = None, working_dir: str | None = None,
           fail_by_exit_value: bool = FAIL_BY_EXIT_VALUE, keep_background: bool = False,
           **others: object) -> Callable[..., Any]:
    """Declare that the task below runs ``binary`` (on PATH, absolute, or in working_dir).

    The parameters are in the reference's table (docs/reference/api.md); any other
    keyword is refused, with the closest supported one.

    Example::

        from taskflow import FILE_OUT_STDOUT, binary, task, wait_on, wait_on_file

        @binary(binary="echo", args="hello {{name}}")
        @task(returns=int, out=FILE_OUT_STDOUT)
        def greet(name: str, out: str) -> int: ...

        print(wait_on(greet("world", "greeting.txt")))   # 0, the exit code
        print(open(wait_on_file("greeting.txt")).read())  # hello world
    """
    check_arguments("binary", dict(others, binary=binary), MANDATORY, SUPPORTED)
    cfg = {"binary": binary, "args": args, "working_dir": working_dir,
           "fail_by_exit_value": fail_by_exit_value, "keep_background": keep_background}
    return lambda target: attach(target, "binary", cfg)
