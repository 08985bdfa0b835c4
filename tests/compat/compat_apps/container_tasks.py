"""A module of app_container.py: its task runs in a container, whose Python imports this
module, and so ``pycompss``, there."""
import sys

from pycompss.api.container import container
from pycompss.api.parameter import FILE_IN
from pycompss.api.task import task

PY = "localhost/taskflow-py:1"


@container(engine="PODMAN", image=PY)
@task(returns=1, src=FILE_IN)
def read_in_image(src, times):
    with open(src) as f:
        return [f.read().strip() * times, sys.executable]
