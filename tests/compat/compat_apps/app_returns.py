"""@task returns in every PyCOMPSs form; several values come back as a list, none as None."""
from pycompss.api.api import compss_wait_on
from pycompss.api.parameter import IN
from pycompss.api.task import task

NOUT = 3


class Point(object):
    def __init__(self, x=0, y=0):
        self.x = x
        self.y = y

    @task(returns=int, target_direction=IN)
    def norm1(self):
        return abs(self.x) + abs(self.y)


class Spec(object):
    def __init__(self, n=2):
        self.n = n


@task(returns=int)
def typed(x):
    return x + 1


@task()
def inferred_two(x):
    if x < 0:
        return 0, 0
    return x, x * 2


@task()
def inferred_none(x):
    print("side effect", x)


@task(returns=2)
def counted(x):
    return x, -x


@task(returns="2")
def counted_str(x):
    return x, x


@task(returns="NOUT")
def from_global(x):
    return tuple(range(x, x + NOUT))


@task(returns="value_of(spec.n)")
def from_param(spec):
    return tuple(range(spec.n))


@task(returns=Point)
def make_point(x, y):
    return Point(x, y)


@task()
def hinted(x) -> tuple[int, int]:
    return x, x


@task(returns=1)
def override(x):
    return tuple(range(x))


if __name__ == "__main__":
    out = {}
    out["typed"] = compss_wait_on(typed(1))
    two = inferred_two(5)
    out["two_type"] = type(two).__name__
    out["two"] = compss_wait_on(two)
    out["none"] = inferred_none(3)
    out["counted"] = compss_wait_on(counted(4))
    out["counted_str"] = compss_wait_on(counted_str(7))
    out["global"] = compss_wait_on(from_global(10))
    NOUT = 2      # a module global read at each call
    out["global2"] = compss_wait_on(from_global(10))
    out["param"] = compss_wait_on(from_param(Spec(4)))
    p = make_point(3, -4)
    out["stand_in"] = type(p).__name__
    out["norm1"] = compss_wait_on(p.norm1())
    p = compss_wait_on(p)
    out["point"] = [p.x, p.y]
    out["override"] = compss_wait_on(override(3, returns=3))
    out["hinted"] = compss_wait_on(hinted(6))
    print("RESULT", sorted(out.items()))
