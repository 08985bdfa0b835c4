"""runcompss behaviour: globals of the launcher, environment script, wall clock limit, errors."""
import time

from pycompss.api.api import compss_barrier, compss_wait_on
from pycompss.api.task import task


@task(returns=int)
def slow(x):
    time.sleep(x)
    return x


@task(returns=str)
def env_value(name):
    import os
    return os.environ.get(name, "unset")


if __name__ == "__main__":
    mode = sys.argv[1]              # noqa: F821 - runcompss's launcher gives `sys`
    if mode == "ok":
        print("RESULT", {"app_path": app_path.endswith("app_launcher.py"),  # noqa: F821
                         "env": compss_wait_on(env_value("APP_SETTING")),
                         "os": os.path.basename(os.getcwd()) != ""})         # noqa: F821
    elif mode == "raise":
        raise RuntimeError("the application failed on purpose")
    elif mode == "sleep":
        slow(30)
        compss_barrier()
        print("RESULT not reached")
