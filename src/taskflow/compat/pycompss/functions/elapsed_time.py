"""``pycompss.functions.elapsed_time``: ``@timeit`` gives ``[result, seconds]``.

Put over ``@task`` it measures the *call* (recording the task), as in
PyCOMPSs; put over a plain function it measures the function.
"""
from __future__ import annotations

import functools
import time
from typing import Any, Callable


class TimeIt:
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args = args
        self.kwargs = kwargs

    def __call__(self, f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def wrapped_f(*args: Any, **kwargs: Any) -> list[Any]:
            ts = time.time()
            result = f(*args, **kwargs)
            return [result, time.time() - ts]
        return wrapped_f


timeit = TimeIt
TimeIT = TimeIt
TIMEIT = TimeIt
