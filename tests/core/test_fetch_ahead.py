"""A ``wait_on`` of a list asks for the values left on their nodes ahead of the one it
reads (api/sync.py ``AHEAD``), and never more than that many ahead.

The journal's ``moves`` table says, for every value brought to the master, when it was
asked for (``t_start``) and when it came (``t_end``), both on the master's clock: the
order of those events is what these tests read, not how long anything took.
"""
from __future__ import annotations

import os
import sqlite3
import time

import pytest

import taskflow
from taskflow import wait_on
from taskflow.api.sync import AHEAD

from support import memory_tasks as MT

SIZE = 300 * 1024       # over the agent's inline limit: the value stays on its node


def _fetches(run_dir: str) -> list[tuple[float, float]]:
    """(asked, came) of each value brought to the master, in the order of its producer."""
    db = sqlite3.connect(os.path.join(run_dir, "journal.db"))
    try:
        return db.execute("SELECT t_start, t_end FROM moves WHERE dst = 'master' "
                          "ORDER BY producer").fetchall()
    finally:
        db.close()


@pytest.mark.parametrize("resumable, given", [(True, "list"), (False, "list"),
                                               (True, "tuple"), (True, "arguments")])
def test_the_values_of_a_list_are_asked_for_before_the_first_one_comes(tmp_path, resumable,
                                                                       given):
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"),
                          resumable=resumable) as rt:
        futs = [MT.blob(SIZE, i) for i in range(3)]
        taskflow.barrier()                      # all made: the wait_on below only reads
        vals = wait_on(futs) if given == "list" else \
            wait_on(tuple(futs)) if given == "tuple" else wait_on(*futs)
        run_dir = rt.run_dir
    assert list(vals) == [bytes([i]) * SIZE for i in range(3)]
    assert type(vals) is (list if given == "list" else tuple)
    moves = _fetches(run_dir)
    assert len(moves) == 3
    first_came = min(came for _, came in moves)
    assert all(asked <= first_came for asked, _ in moves), moves


def test_a_list_is_read_with_at_most_AHEAD_values_asked_for_ahead(tmp_path):
    n = AHEAD + 5
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs")) as rt:
        futs = [MT.blob(SIZE, i) for i in range(n)]
        taskflow.barrier()
        vals = wait_on(futs)
        run_dir = rt.run_dir
    assert vals == [bytes([i]) * SIZE for i in range(n)]
    moves = _fetches(run_dir)
    assert len(moves) == n
    # value k is asked for when value k - AHEAD is read, so after every value before that
    # one came (a value is read only once it came)
    for k in range(AHEAD + 1, n):
        asked = moves[k][0]
        assert all(came <= asked for _, came in moves[:k - AHEAD]), (k, moves)


def test_values_asked_for_ahead_from_a_node_lost_meanwhile_are_made_again_once(rt4):
    """Half the values of a list were on a node that is lost before the wait_on: asking
    for them ahead has each lost one made again once, and every value comes back."""
    futs = [MT.blob(SIZE, i) for i in range(8)]
    taskflow.barrier()
    holders = {next(iter(f._holders)) for f in futs}
    assert len(holders) == 2, "the values went to one node"
    node = next(n for n in rt4.nodes if n.name == sorted(holders)[0])
    lost = sum(1 for f in futs if node.name in f._holders)
    node.provider.kill(node)
    deadline = time.time() + 30
    while node.alive and time.time() < deadline:       # (the loop notices the lost node)
        time.sleep(0.05)
    assert not node.alive
    assert wait_on(futs) == [bytes([i]) * SIZE for i in range(8)]
    assert rt4.tally.retries == lost
