"""@constraint: values from numbers, $ENV, parameters, module globals and expressions,
read at each call; placement-only keys accepted and recorded."""
import os

from pycompss.api.api import compss_wait_on
from pycompss.api.constraint import constraint
from pycompss.api.task import task

CORES = 2


@constraint(computing_units="CORES")
@task(returns=str)
def from_global():
    return "global"


@constraint(computingUnits="$APP_CORES", memorySize=0.1)
@task(returns=str)
def from_env():
    return "env"


@constraint(computing_units="n")
@task(returns=int)
def from_param(n):
    return n


@constraint(computing_units="n + 1")
@task(returns=int)
def from_expression(n):
    return n


@constraint(processor_architecture="amd64", operating_system_type="Linux",
            app_software="numpy", host_queues="debug", storage_size=1.0,
            processorSpeed=2.5)
@task(returns=int)
def recorded():
    return 1


if __name__ == "__main__":
    os.environ["APP_CORES"] = "1"
    out = {"global": compss_wait_on(from_global()), "env": compss_wait_on(from_env()),
           "param": compss_wait_on(from_param(2)),
           "expression": compss_wait_on(from_expression(1)),
           "recorded": compss_wait_on(recorded())}
    CORES = 1
    out["global_changed"] = compss_wait_on(from_global())
    try:
        from_param(5)
        out["too_big"] = "no error"
    except Exception as exc:
        out["too_big"] = type(exc).__name__ + ": " + str(exc).split(";")[0]
    print("RESULT", sorted(out.items()))
