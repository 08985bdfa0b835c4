"""A tree reduction over two nodes: each ``add`` has two inputs made by tasks of different
durations, on either node, so its node gets it ahead of its inputs (a chained task, held
on the node) while one input is made there and the other comes from the master or the
other node. Every add must run: a held task whose inputs came is never left waiting (a
PyCOMPSs library's run once hung for good on two such tasks)."""
from __future__ import annotations

import random
import time

import numpy as np

import taskflow
from taskflow import task

LEAVES = 400
ROUNDS = 3
WAIT = 180.0        # s: the whole reduction, on a loaded 2-core machine (it takes ~1 s)


@task(returns=1)
def leaf(i: int, pause: float, big: bool):
    time.sleep(pause)
    # some values too large to travel with the result: they stay on their node, and a
    # task on the other node gets them in parts (runtime.loop.relay)
    return np.full(40_000, float(i)) if big else float(i)


@task(returns=1)
def add(a, b, pause: float):
    time.sleep(pause)
    return a + b


def _total(x) -> float:
    return float(x[0]) if isinstance(x, np.ndarray) else float(x)


def test_every_add_of_a_tree_reduction_over_two_nodes_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rnd = random.Random(47)
    with taskflow.Runtime(workers=2, nodes=2, run_dir=str(tmp_path / "runs")):
        for r in range(ROUNDS):
            big = r == ROUNDS - 1           # the last round passes arrays along
            xs = [leaf(i, rnd.random() * 0.005, big) for i in range(LEAVES)]
            while len(xs) > 1:
                nxt = [add(xs[j], xs[j + 1], rnd.random() * 0.005)
                       for j in range(0, len(xs) - 1, 2)]
                if len(xs) % 2:
                    nxt.append(xs[-1])
                xs = nxt
            # (a deadline, not a hang: a task left on a node fails the test, naming the round)
            got = xs[0].result(timeout=WAIT)
            assert _total(got) == LEAVES * (LEAVES - 1) / 2, f"round {r}"
