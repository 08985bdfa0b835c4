"""``pycompss.runtime.management.classes.Future``: the future a task call returns.

It is taskflow's :class:`~taskflow.future.Future` (a
``concurrent.futures.Future``), so ``isinstance(x, Future)`` tests in
applications hold for every value a task call returns.
"""
from .....future import Future

__all__ = ["Future"]
