"""A class with a replicated task method in a module of the application: the copies carry
this module's function and instance, which import pycompss on every node."""
from pycompss.api.parameter import IN
from pycompss.api.task import task


class Model(object):
    def __init__(self):
        self.ready = False

    @task(returns=1, is_replicated=True)
    def build(self, size):
        self.ready = True
        return size * 2

    @task(target_direction=IN, returns=1)
    def ask(self):
        return self.ready
