"""SSH nodes: remote no-op throughput against local, and least-loaded against round-robin.

    python benchmarks/ssh_bench.py [--tasks 20000] [--skew-tasks 40] [--json out.json]

Needs root (it brings up the namespace hosts of testbed/ssh_hosts.sh
if they are not up, and takes them down again at the end).

1. throughput: N no-op tasks through one SSH node (h1, 2 slots) against one
   local node with the same 2 slots; the ratio remote/local is the figure
   (target >= 0.5).
2. skew: two SSH nodes with one core each (``taskset`` in ``python:``); h1's
   core is kept busy by an outside load (spinning processes in its
   namespace, HOGS of them). CPU-bound tasks run in waves as wide as the
   cluster (2 at a time, the next wave when both are done) with placement fifo
   (round-robin) and least-loaded (the DTES policy: nodes' reported CPU minus
   their own); the figure is the time ratio fifo / least-loaded (> 1:
   least-loaded wins).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))

import taskflow  # noqa: E402
from taskflow import task, wait_on  # noqa: E402
from taskflow.providers.cluster import NodeConfig  # noqa: E402
from taskflow.providers.ssh import SSHProvider  # noqa: E402

import testbed  # noqa: E402  (benchmarks/testbed.py: the SSH testbed's lock and hosts)

SCRIPT = os.path.join(ROOT, "testbed", "ssh_hosts.sh")
TB = os.environ.get("TF_TB", "/tmp/taskflow-tb")
HOGS = 3          # spinning processes on h1's core: it runs taskflow's work at ~1/4 speed


@task(returns=int)
def noop(x):
    return x


@task(returns=str)
def spin(seconds):
    import socket
    t0 = time.process_time()
    while time.process_time() - t0 < seconds:   # CPU time: slower where the core is shared
        pass
    return socket.gethostname()


def _env() -> dict:
    return testbed.hosts_env(TB)


def _nodes(env: dict, slots: int, pin: bool = False) -> list:
    out = []
    for i, host in enumerate(env["TF_TB_HOSTS"].split()[:2], 1):
        py = f"taskset -c {i - 1} {sys.executable}" if pin else sys.executable
        out.append(NodeConfig(name=f"h{i}", host=host, user="root", identity_file=env["TF_TB_KEY"],
                              computing_units=slots, python=py, working_dir=f"{TB}/bench-h{i}",
                              shared_fs=False))
    return out


def _provider(env: dict, nodes: list) -> SSHProvider:
    return SSHProvider(nodes, known_hosts=env["TF_TB_KNOWN_HOSTS"], sample_interval=0.25,
                       heartbeat_timeout=30)


def _rate(rt: taskflow.Runtime, n: int) -> float:
    wait_on([noop(i) for i in range(200)])      # warm-up: functions shipped, stats learnt
    t0 = time.perf_counter()
    futs = [noop(i) for i in range(n)]
    assert wait_on(futs)[-1] == n - 1
    return n / (time.perf_counter() - t0)


def throughput(env: dict, n: int, run_dir: str) -> dict:
    with taskflow.Runtime(workers=2, run_dir=run_dir, echo_logs=False) as rt:
        local = _rate(rt, n)
    nodes = _nodes(env, 2)[:1]
    with taskflow.Runtime(providers=[_provider(env, nodes)], run_dir=run_dir,
                          echo_logs=False) as rt:
        remote = _rate(rt, n)
    return {"tasks": n, "local_per_s": round(local), "ssh_per_s": round(remote),
            "ratio": round(remote / local, 3)}


def skew(env: dict, n: int, seconds: float, run_dir: str) -> dict:
    burn = "import time\nwhile True: pass\n"
    hogs = [subprocess.Popen(["nsenter", "--net=/run/netns/tfh1", "taskset", "-c", "0",
                              sys.executable, "-c", burn], start_new_session=True)
            for _ in range(HOGS)]      # own sessions: CFS autogroups would shield the agent
    out: dict = {"tasks": n, "task_cpu_s": seconds}
    try:
        time.sleep(1.0)
        for policy in ("fifo", "least-loaded"):
            with taskflow.Runtime(providers=[_provider(env, _nodes(env, 1, pin=True))],
                                  placement=policy, run_dir=run_dir, echo_logs=False):
                time.sleep(1.0)                       # let both nodes report a few samples
                wait_on([spin(seconds) for _ in range(4)])    # learn the task's duration
                t0 = time.perf_counter()
                hosts = []
                for _ in range(n // 2):      # waves as wide as the cluster (2 slots)
                    hosts += wait_on([spin(seconds) for _ in range(2)])
                out[policy + "_s"] = round(time.perf_counter() - t0, 3)
                out[policy + "_on_h1"] = hosts.count("h1")
    finally:
        for p in hogs:
            p.kill()
            p.wait()
    out["ratio_fifo_over_least_loaded"] = round(out["fifo_s"] / out["least-loaded_s"], 3)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=20000)
    ap.add_argument("--skew-tasks", type=int, default=30)
    ap.add_argument("--task-seconds", type=float, default=0.1)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("ssh_bench.py needs root (network namespaces)")
    os.makedirs(TB, exist_ok=True)
    lock = testbed.lock()
    was_up = os.path.exists(os.path.join(TB, "hosts.env"))
    subprocess.run(["bash", SCRIPT, "up", "2"], check=True, env=dict(os.environ, TF_TB=TB))
    run_dir = os.path.join(TB, "bench-runs")
    try:
        env = _env()
        res = {"throughput": throughput(env, a.tasks, run_dir),
               "skew": skew(env, a.skew_tasks, a.task_seconds, run_dir)}
    finally:
        if not was_up:
            subprocess.run(["bash", SCRIPT, "down"], env=dict(os.environ, TF_TB=TB))
        lock.close()
    t, s = res["throughput"], res["skew"]
    print(f"no-op throughput: local {t['local_per_s']}/s, ssh {t['ssh_per_s']}/s, "
          f"ratio {t['ratio']} (target >= 0.5)")
    print(f"skewed cluster ({s['tasks']} x {s['task_cpu_s']} s CPU, h1 busy): fifo "
          f"{s['fifo_s']} s, least-loaded {s['least-loaded_s']} s, ratio "
          f"{s['ratio_fifo_over_least_loaded']}")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)


if __name__ == "__main__":
    main()
