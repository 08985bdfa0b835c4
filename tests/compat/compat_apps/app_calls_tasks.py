"""A PyCOMPSs application whose tasks call tasks: a recursive task and a task whose
returns=2 child is unpacked as PyCOMPSs gives it (a list)."""
from pycompss.api.api import compss_wait_on
from pycompss.api.task import task


@task(returns=1)
def fib(n):
    if n < 2:
        return n
    a = fib(n - 1)
    b = fib(n - 2)
    return compss_wait_on(a) + compss_wait_on(b)


@task(returns=2)
def pair(x):
    return x, x + 1


@task(returns=1)
def product_of_pair(x):
    a, b = pair(x)
    return compss_wait_on(a) * compss_wait_on(b)


if __name__ == "__main__":
    print("RESULT", {"fib": compss_wait_on(fib(10)), "pair": compss_wait_on(product_of_pair(3))})
