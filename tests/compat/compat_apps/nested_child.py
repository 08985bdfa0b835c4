"""A small PyCOMPSs application run as one task of app_nested.py (@compss)."""
import sys

from pycompss.api.api import compss_wait_on
from pycompss.api.task import task


@task(returns=int)
def double(x):
    return 2 * x


if __name__ == "__main__":
    n = int(sys.argv[1])
    total = sum(compss_wait_on([double(i) for i in range(n)]))
    with open(sys.argv[2], "w") as fh:
        fh.write(str(total))
    sys.exit(0 if total > 0 else 4)
