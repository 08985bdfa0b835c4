"""COMPSsException in a TaskGroup: no retry, the group's tasks cancelled, raised at the exit."""
import os
import time

from pycompss.api.api import TaskGroup, compss_barrier_group, compss_wait_on
from pycompss.api.binary import binary
from pycompss.api.exceptions import COMPSsException
from pycompss.api.task import task

ATTEMPTS = "attempts.txt"


@task(returns=int)
def check(v):
    with open(ATTEMPTS, "a") as fh:          # one line per run: a retry would add one
        fh.write(f"{v}\n")
    time.sleep(0.3)
    if v == 3:
        raise COMPSsException(f"{v} found")
    return v


@binary(binary="sh", args="-c 'sleep 30; touch {{marker}}'")
@task()
def long_program(marker):
    pass


@task(returns=int)
def after(x):
    return x * 10


if __name__ == "__main__":
    t0 = time.time()
    caught = None
    try:
        with TaskGroup("group1"):
            long_program("marker.txt")
            for i in range(6):
                check(i)
    except COMPSsException as exc:
        caught = str(exc)
    elapsed = time.time() - t0
    # the application goes on: new tasks run
    goes_on = compss_wait_on(after(4))
    # a group that is not waited for at its exit: the exception at compss_barrier_group
    with TaskGroup("group2", False):
        check(3)
    late = None
    try:
        compss_barrier_group("group2")
    except COMPSsException as exc:
        late = str(exc)
    runs_of_3 = open(ATTEMPTS).read().split().count("3")
    print("RESULT", {"caught": caught, "fast": elapsed < 20, "goes_on": goes_on,
                     "late": late, "runs_of_3": runs_of_3,
                     "program_killed": not os.path.exists("marker.txt")})
