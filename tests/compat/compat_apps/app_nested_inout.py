"""A task that gives one of its objects to a task it calls, declared INOUT: under
--agents the child cannot write the parent's object (an error at the call, not the
old value back)."""
from pycompss.api.api import compss_wait_on
from pycompss.api.parameter import INOUT
from pycompss.api.task import task


class Box:
    def __init__(self):
        self.value = 0


@task(box=INOUT)
def increment(box):
    box.value += 1


@task(returns=1)
def parent():
    box = Box()
    increment(box)
    return compss_wait_on(box).value


if __name__ == "__main__":
    print("RESULT", {"value": compss_wait_on(parent())})
