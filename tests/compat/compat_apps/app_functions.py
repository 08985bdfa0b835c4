"""pycompss.functions: elapsed_time.timeit, reduce.merge_reduce / merge_n_reduce,
data.generator, map."""
from pycompss.api.api import compss_wait_on
from pycompss.api.task import task
from pycompss.functions.data import generator
from pycompss.functions.elapsed_time import timeit
from pycompss.functions.map import map as cmap
from pycompss.functions.reduce import merge_n_reduce, merge_reduce


@task(returns=int)
def add(a, b):
    return a + b


@task(returns=int)
def add3(a, b, c):
    return a + b + c


@task(returns=int)
def square(x):
    return x * x


@timeit()
def timed(n):
    return sum(range(n))


if __name__ == "__main__":
    data = [square(i) for i in range(7)]
    out = {"merge_reduce": compss_wait_on(merge_reduce(add, data)),
           "merge_n_reduce": compss_wait_on(merge_n_reduce(add3, 3, list(range(1, 10)))),
           "map": compss_wait_on(cmap(square, [1, 2, 3]))}
    result, seconds = timed(1000)
    out["timeit"] = [result, seconds >= 0]
    frags = generator((12, 3), 4, seed=7, distribution="uniform", wait=True)
    out["generator"] = [len(frags), [len(f) for f in frags], len(frags[0][0]),
                        all(-1 <= v <= 1 for f in frags for p in f for v in p)]
    again = generator((12, 3), 4, seed=7, distribution="uniform", wait=True)
    out["generator_seeded"] = frags == again
    # PyCOMPSs: every fragment seeds the global random with the seed, then draws its rows
    import random
    random.seed(7)
    rows = [[random.uniform(-1.0, 1.0) for _ in range(3)] for _ in range(3)]
    out["generator_rows"] = all(f == rows for f in frags)
    print("RESULT", sorted(out.items()))
