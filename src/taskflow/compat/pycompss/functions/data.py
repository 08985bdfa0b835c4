"""``pycompss.functions.data``: random data sets made by tasks, fragment by fragment.

``generator((elements, dim), num_frag, seed=None, distribution="random",
wait=False)`` gives ``num_frag`` fragments (futures, or lists with
``wait=True``), each a list of ``elements // num_frag`` points of ``dim``
values drawn from ``random`` (uniform [0, 1)), ``normal`` (Gauss 0, 1) or
``uniform`` ([-1, 1]). As in PyCOMPSs, every fragment seeds the global
``random`` with ``seed`` and then draws its rows, so with a seed the fragments
are equal (and the same on any number of nodes); ``seed=None`` seeds from the
system's entropy, fragment by fragment.
"""
from __future__ import annotations

from typing import Any

from ....errors import UsageError
from ..api.task import task

DISTRIBUTIONS = ("random", "normal", "uniform")


def chunks(lst: list[Any], n: int, balanced: bool = False) -> Any:
    """Fragments of ``lst`` of length ``n`` (balanced: the remainder spread over the first)."""
    if not balanced or not len(lst) % n:
        for i in range(0, len(lst), n):
            yield lst[i:i + n]
        return
    rest = len(lst) % n
    start = 0
    while rest:
        yield lst[start:start + n + 1]
        rest -= 1
        start += n + 1
    for i in range(start, len(lst), n):
        yield lst[i:i + n]


@task(returns=list)
def _fragment(dim: int, count: int, seed: Any, index: int, distribution: str) -> list[Any]:
    import random
    random.seed(seed)

    def draw() -> float:
        if distribution == "normal":
            return random.gauss(mu=0.0, sigma=1.0)
        if distribution == "uniform":
            return random.uniform(-1.0, 1.0)
        return random.random()
    return [[draw() for _ in range(dim)] for _ in range(count)]


def generator(size: tuple[int, int], num_frag: int, seed: Any = None,
              distribution: str = "random", wait: bool = False) -> list[Any]:
    if distribution not in DISTRIBUTIONS:
        raise UsageError(f"generator: distribution={distribution!r} is not one of "
                         f"{', '.join(DISTRIBUTIONS)}.")
    elements, dim = size
    if not isinstance(num_frag, int) or num_frag < 1:
        raise UsageError(f"generator: num_frag must be an int >= 1, not {num_frag!r}.")
    per = int(elements) // num_frag
    data = [_fragment(int(dim), per, seed, i, distribution) for i in range(num_frag)]
    if wait:
        from ..api.api import compss_wait_on
        data = compss_wait_on(data)
    return data
