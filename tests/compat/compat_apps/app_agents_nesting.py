"""A PyCOMPSs application written for its agents: a task that calls itself down to 1 and
waits for each call (as PyCOMPSs's agents' nested tests do), and a task that reports
whether its calls of tasks are submitted (CONTEXT.is_nesting_enabled())."""
import sys

from pycompss.api.api import compss_wait_on
from pycompss.api.task import task
from pycompss.util.context import CONTEXT


@task(returns=1)
def count(n):
    below = compss_wait_on(count(n - 1)) if n > 1 else 0
    return below + 1


@task(returns=1)
def nesting():
    return CONTEXT.is_nesting_enabled()


if __name__ == "__main__":
    n = int(sys.argv[1])
    print("RESULT", {"count": compss_wait_on(count(n)), "in_task": compss_wait_on(nesting()),
                     "in_main": CONTEXT.is_nesting_enabled()})
