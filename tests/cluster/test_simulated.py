"""The real master against simulated node agents (taskflow.providers.simulated): the
handshake, task and result frames, samples, and a node lost mid-run, over the real wire."""
from __future__ import annotations

import time

import taskflow
from taskflow import task, wait_on
from taskflow.journal.reader import Journal
from taskflow.providers.simulated import SimulatedProvider


@task(returns=1)
def echo(x):
    return x


def test_a_handful_of_simulated_nodes_run_a_workflow_and_its_journal_says_so(tmp_path):
    prov = SimulatedProvider(5, task_seconds=0.01, sample_interval=0.3)
    rt = taskflow.Runtime(providers=[prov], run_dir=str(tmp_path), echo_logs=False)
    rt.start()
    try:
        assert len(rt.nodes) == 5
        n = rt.nodes[0]
        assert n.info["version"] == taskflow.__version__ and n.info["slots"] == 1
        assert n.hostname == f"sim-{n.name}"          # READY came from the simulated agent
        got = wait_on([echo(i) for i in range(200)])
        time.sleep(0.8)                                  # a few samples from every node
        assert all(nd.sample is not None for nd in rt.nodes)
    finally:
        rt.stop()
    assert got == list(range(200))
    with Journal(rt.run_dir) as j:
        assert j.counts()["DONE"] == 200
        assert {nd["name"] for nd in j.nodes()} == {nd.name for nd in rt.nodes}
        ran_on = {t["node"] for t in j.tasks()}
        assert len(ran_on) == 5                          # the work spread over every node
        assert {s["node"] for s in j.samples()} == ran_on


def test_a_simulated_node_lost_mid_run_hands_its_tasks_to_the_others(tmp_path):
    prov = SimulatedProvider(3, task_seconds=0.15)
    lost: list[str] = []
    rt = taskflow.Runtime(providers=[prov], run_dir=str(tmp_path), echo_logs=False)
    rt.start()
    rt.bus.subscribe(lambda evs: lost.extend(e[4] for e in evs if e[0] == "node_lost"))
    try:
        victim = rt.nodes[1]
        futs = [echo(i) for i in range(18)]              # 3 nodes x (1 + 1 prefetched) ...
        deadline = time.time() + 10
        while not victim.inflight and time.time() < deadline:
            time.sleep(0.01)
        assert victim.inflight, "nothing went to the node before it was lost"
        prov.kill(victim)
        got = wait_on(futs)
    finally:
        rt.stop()
    assert got == list(range(18))                        # nothing lost, nothing twice
    assert not victim.alive and lost == [victim.name]
    with Journal(rt.run_dir) as j:
        rows = j.tasks()
        assert j.counts()["DONE"] == 18
        assert all(t["node"] != victim.name for t in rows)   # every result came from the others
        moved = [tr for t in rows for tr in j.task(t["id"])["transitions"]
                 if tr["node"] == victim.name and "lost" in (tr["info"] or "")]
        assert moved                                         # and some ran again there
        gone = [nd for nd in j.nodes() if nd["name"] == victim.name]
        assert gone and gone[0]["t_lost"] is not None
