"""compss_cancel_group (waiting and running tasks) and compss_stop(code)."""
import os
import sys
import time

from pycompss.api.api import (TaskGroup, compss_cancel_group, compss_stop, compss_wait_on)
from pycompss.api.binary import binary
from pycompss.api.task import task


@binary(binary="sh", args="-c 'sleep 30; touch {{marker}}'")
@task()
def slow_program(marker):
    pass


@task(returns=int)
def slow(x):
    time.sleep(30)
    return x


@task(returns=int)
def quick(x):
    return x + 1


if __name__ == "__main__":
    mode = sys.argv[1]
    t0 = time.time()
    if mode == "cancel":
        with TaskGroup("g", False):
            slow_program("m1.txt")
            futures = [slow(i) for i in range(4)]
        time.sleep(1.0)                    # the first ones are running
        compss_cancel_group("g")
        cancelled = 0
        for f in futures:
            try:
                compss_wait_on(f)
            except Exception as exc:       # TaskCancelled
                cancelled += "cancelled" in str(exc)
        print("RESULT", {"cancelled": cancelled, "fast": time.time() - t0 < 20,
                         "after": compss_wait_on(quick(1)),
                         "program_killed": not os.path.exists("m1.txt")})
    else:
        slow_program("m2.txt")
        slow(1)
        time.sleep(1.0)
        print("STOPPING")
        sys.stdout.flush()
        compss_stop(int(mode))
        print("RESULT", {"fast": time.time() - t0 < 20})
