"""What a library written for PyCOMPSs does with a model (issue 37): it waits on every
attribute of the object, whatever each one is, before it saves it. PyCOMPSs gives back what
it does not track as it is, so a method, a task function or a generator kept as an attribute
comes back unchanged while the futures among them become values."""
from pycompss.api.api import compss_wait_on
from pycompss.api.task import task


@task(returns=1)
def fit_block(block):
    return sum(block)


class Model:
    def __init__(self):
        self.kernel = self._linear      # a bound method kept as a setting
        self.fit_task = fit_block       # a task function itself
        self.batches = (b for b in range(3))
        self.name = "linear"

    def _linear(self, x):
        return x

    def fit(self, blocks):
        self.coef = [fit_block(b) for b in blocks]
        self.total = fit_block([1, 2, 3])
        return self

    def synced(self):
        # the library's idiom: every attribute through compss_wait_on
        return {key: compss_wait_on(value) for key, value in self.__dict__.items()}


if __name__ == "__main__":
    model = Model().fit([[1, 2], [3, 4]])
    batches = model.batches
    state = model.synced()
    print("RESULT", {
        "coef": state["coef"], "total": state["total"], "name": state["name"],
        "kernel": state["kernel"] == model._linear and state["kernel"](5) == 5,
        "task_fn": state["fit_task"] is fit_block,
        "generator": state["batches"] is batches and list(batches) == [0, 1, 2],
        "several": compss_wait_on(print, model.total) == [print, 6],
    })
