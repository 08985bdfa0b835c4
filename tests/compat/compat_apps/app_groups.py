"""@multinode: N node groups of the task's computing units, several on a node with room."""
import os

from pycompss.api.api import compss_wait_on
from pycompss.api.constraint import constraint
from pycompss.api.multinode import multinode
from pycompss.api.task import task


@constraint(computing_units=1)
@multinode(computing_nodes=2)
@task(returns=1)
def two_groups():
    return [os.environ[k] for k in ("COMPSS_NUM_NODES", "COMPSS_HOSTNAMES",
                                    "COMPSS_NUM_THREADS", "OMP_NUM_THREADS")]


@constraint(computing_units=2)
@multinode(computing_nodes="GROUPS")
@task(returns=1)
def wide():
    return os.environ["COMPSS_NUM_NODES"], os.environ["COMPSS_HOSTNAMES"]


GROUPS = 1

if __name__ == "__main__":
    print("RESULT", {"two_groups": compss_wait_on(two_groups()),
                     "wide": list(compss_wait_on(wide()))})
