"""Start-up of many SSH nodes: seconds from ``Runtime.start()`` to every node ready.

    python benchmarks/ssh_start_bench.py [--hosts 60] [--repeat 3] [--json PATH]

Brings up the namespace hosts of testbed/ssh_hosts.sh (needs root;
at most 60: the testbed's /26 holds no more addresses), holding the SSH
testbed's lock for the whole run, and starts a runtime over all of them (one
slot each, shared filesystem, the venv's interpreter), then over 1/4 and 1/2
of them, so the growth with the host count shows; each start is followed by
one 0.2 s task per node (every node answers) and a stop. Reported: seconds
to all nodes ready (handshaken), and to a result from every node.

The floor, measured in the same run just before each start (same hosts):
OpenSSH's client connecting to every host at once and running the same
interpreter with ``-c "import taskflow"`` there (one process per host, all
in parallel), seconds until the last one exited. Target: all ready within
1.3x of the floor for 60 hosts.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
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
MAX_HOSTS = 60


@task(returns=str)
def where(i):
    """Long enough (0.2 s) that the tasks spread one per node, not in a slice."""
    import socket
    import time as _t
    _t.sleep(0.2)
    return socket.gethostname()


def _env() -> dict:
    return testbed.hosts_env(TB)


def floor(env: dict, n: int) -> float:
    """Seconds for OpenSSH to run the interpreter with ``import taskflow`` on n hosts at once."""
    hosts = env["TF_TB_HOSTS"].split()[:n]
    wrap = env["TF_TB_SSH_WRAP"]
    t0 = time.perf_counter()
    procs = [subprocess.Popen([wrap, h, sys.executable, "-c", "'import taskflow'"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for h in hosts]
    bad = [(h, p.wait(), p.stderr.read().decode() if p.stderr else "")
           for h, p in zip(hosts, procs)]
    took = time.perf_counter() - t0
    failed = [(h, rc, err.strip()[-200:]) for h, rc, err in bad if rc != 0]
    if failed:
        raise RuntimeError(f"the OpenSSH floor failed on {len(failed)} hosts: {failed[:3]}")
    return took


def one_start(env: dict, n: int, run_dir: str) -> dict:
    hosts = env["TF_TB_HOSTS"].split()[:n]
    nodes = [NodeConfig(name=f"h{i}", host=h, user="root", identity_file=env["TF_TB_KEY"],
                        computing_units=1, python=sys.executable,
                        working_dir=f"{TB}/start-h{i}", shared_fs=True)
             for i, h in enumerate(hosts, 1)]
    prov = SSHProvider(nodes, known_hosts=env["TF_TB_KNOWN_HOSTS"], connect_timeout=60)
    rt = taskflow.Runtime(providers=[prov], run_dir=run_dir, echo_logs=False,
                          start_timeout=120)
    t0 = time.perf_counter()
    rt.start()
    ready = time.perf_counter() - t0
    try:
        futs = [where(i) for i in range(n)]
        names = wait_on(futs)
        first = time.perf_counter() - t0
        if len(set(names)) < n:
            raise AssertionError(f"the {n} tasks ran on {sorted(set(names))} only")
    finally:
        rt.stop()
    return {"hosts": n, "ready_s": ready, "first_results_s": first}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", type=int, default=MAX_HOSTS)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=os.path.join(HERE, "results", "ssh_start.json"))
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("ssh_start_bench.py needs root (network namespaces)")
    n = min(a.hosts, MAX_HOSTS)
    os.makedirs(TB, exist_ok=True)
    lock = testbed.lock()                     # the tests' SSH sessions wait meanwhile
    before = 0
    if os.path.exists(os.path.join(TB, "count")):
        with open(os.path.join(TB, "count")) as f:
            before = int(f.read().strip() or 0)
    env_tb = dict(os.environ, TF_TB=TB)
    t = time.perf_counter()
    subprocess.run(["bash", SCRIPT, "up", str(n)], check=True, env=env_tb)
    up_s = time.perf_counter() - t
    run_dir = os.path.join(TB, "bench-runs")
    samples: dict[int, list[dict]] = {}
    try:
        env = _env()
        sizes = sorted({max(1, n // 4), max(1, n // 2), n})
        for rep in range(a.repeat):
            for k in sizes:
                f = floor(env, k)
                r = one_start(env, k, run_dir)
                r["floor_s"] = f
                r["ready_over_floor"] = r["ready_s"] / f
                samples.setdefault(k, []).append(r)
                print(f"[rep {rep + 1}] {k} SSH nodes: ready in {r['ready_s']:.2f} s, a result "
                      f"from each in {r['first_results_s']:.2f} s; OpenSSH floor {f:.2f} s "
                      f"({r['ready_over_floor']:.2f}x)", file=sys.stderr, flush=True)
    finally:
        subprocess.run(["bash", SCRIPT, "down"], env=env_tb)
        if before:          # someone had hosts up (a crashed session): leave as many up
            subprocess.run(["bash", SCRIPT, "up", str(before)], env=env_tb)
        lock.close()
    lines = ["| SSH nodes | s to all ready (min-max) | OpenSSH floor s (min-max) | ready / floor "
             "(median of the same-run ratios) | s to a result from each |", "|---|---|---|---|---|"]
    for k, rs in sorted(samples.items()):
        ready = [r["ready_s"] for r in rs]
        first = [r["first_results_s"] for r in rs]
        fl = [r["floor_s"] for r in rs]
        ratio = statistics.median(r["ready_over_floor"] for r in rs)
        lines.append(f"| {k} | {statistics.median(ready):.2f} ({min(ready):.2f}-{max(ready):.2f}) | "
                     f"{statistics.median(fl):.2f} ({min(fl):.2f}-{max(fl):.2f}) | {ratio:.2f} | "
                     f"{statistics.median(first):.2f} |")
    lines.append(f"\n(testbed: {n} network-namespace hosts with their own sshd, brought up in "
                 f"{up_s:.1f} s; one slot each; {os.cpu_count()} cores run every sshd, agent and "
                 f"executor)")
    print("\n".join(lines))
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump({"samples": samples, "testbed_up_s": up_s, "table": "\n".join(lines)}, f,
                  indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
