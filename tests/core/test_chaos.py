"""A small run of the chaos driver's scenario (a) (benchmarks/chaos.py): executors
SIGKILLed while a mixed workflow runs on two local node agents; every value and
file must still be right, every task done once in the journal, nothing left behind."""
import argparse
import os
import random
import sys

import pytest

from support.paths import ROOT

BENCH = os.path.join(ROOT, "benchmarks")


@pytest.fixture
def chaos():
    sys.path.insert(0, BENCH)
    try:
        import chaos
        yield chaos
    finally:
        sys.path.remove(BENCH)


@pytest.mark.timeout(300)
def test_executors_killed_mid_run_lose_no_value_no_file_and_leave_nothing(chaos, tmp_path):
    args = argparse.Namespace(tasks=300, kills=4, agent_kills=0, nodes=2, workers=4,
                              crash_limit=3, nap=0.01)
    res = chaos.scenario_a(str(tmp_path), args, random.Random(14))
    assert res["status"] == 0, res.get("stderr_tail")
    assert res["kills"] == {"executor": 4}
    assert res["values"] > 200 and res["wrong_values"] == 0, res["wrong_examples"]
    assert res["files"] > 40 and res["bad_files"] == 0, res["bad_file_examples"]
    assert res["never_finished"] == 0
    assert res["journal_ok"], (res["journal_state"], res["journal_tasks"])
    assert res["left_behind"] == []
    assert res["ok"], res["problems"]


@pytest.mark.timeout(300)
def test_the_only_agent_killed_fails_the_run_at_once_naming_the_lost_node(chaos, tmp_path):
    args = argparse.Namespace(tasks=1000, crash_limit=3, nap=0.002)
    res = chaos.scenario_d(str(tmp_path), args, random.Random(14))
    assert res["status"] == 1, res.get("stderr_tail")       # not None: it did not hang
    assert "no nodes left: node local was lost" in res["says"]
    assert res["left_behind"] == []
    assert res["ok"], res["problems"]
