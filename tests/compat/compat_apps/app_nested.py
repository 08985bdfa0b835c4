"""@compss: a whole PyCOMPSs application as one task (a nested run), and its exit code."""
import os

from pycompss.api.api import compss_wait_on
from pycompss.api.compss import compss
from pycompss.api.constraint import constraint
from pycompss.api.task import task

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "nested_child.py")


@constraint(computing_units=2)
@compss(runcompss="${RUNCOMPSS}", flags="--summary", app_name=CHILD, args="{{n}} {{out}}",
        computing_nodes=1)
@task(returns=int)
def child(n, out):
    pass


@compss(app_name=CHILD, args="{{n}} {{out}}", fail_by_exit_value=False)
@task(returns=int)
def child_exit(n, out):
    pass


if __name__ == "__main__":
    code = compss_wait_on(child(5, "total.txt"))
    bad = compss_wait_on(child_exit(0, "zero.txt"))
    print("RESULT", {"exit": code, "total": open("total.txt").read(), "bad_exit": bad})
