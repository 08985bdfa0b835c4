"""Data-heavy workflows in bounded memory (issue 15): M1, M2 and X, each in a fresh interpreter.

    python benchmarks/memory_bench.py [--only M1,M2,X] [--src DIR] [--m1-tasks 20000]
                                      [--repeat 1] [--json out.json]

``--src`` runs the taskflow found in another checkout's ``src`` (the same
workloads, before and after a change). Peak RSS is sampled every 10 ms over
the master and every process below it (journal writer, agents, executors).

M1  20,000 x ``consume(produce(i))`` with 1 MiB values, submitted in one loop,
    no waves, 2 workers: every result checked; the peak RSS of all taskflow
    processes together (target < 1 GB); the wall time against the same
    pipeline with 1 KiB values plus the time the bytes themselves take to be
    made and moved once between two processes (a producer process writing the
    same 20,000 values of 1 MiB into a pipe, a consumer reading them): target
    wall(1 MiB) <= 1.5 x (wall(1 KiB) + raw bytes).
M2  a 100 MB numpy array through a chain of 10 tasks (``a + 1.0`` each):
    wall time, peak RSS of all processes, and that peak over the idle run's
    (target < 4 x the array).
X   20 values of 100 MB made on SSH host h1 and read on h2 (testbed
    hosts, root only): the master's peak RSS over its idle figure while they
    move (h1 has 1 slot and more memory declared, h2 2 slots and less: the
    producers fit only h1, the consumers only h2).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MiB = 2**20


# -- what the child runs --------------------------------------------------------------------
class Peak:
    """Peak of the summed RSS of this process and all below it (or of this one only).

    The processes are listed once and again every second (walking /proc for children
    is slow on a busy machine); each sample reads /proc/<pid>/statm."""

    def __init__(self, tree: bool = True) -> None:
        self.tree = tree
        self.peak = 0
        self._stop = False
        self._pids: list[int] = []
        self._listed = 0.0
        self.t = threading.Thread(target=self._run, daemon=True)

    def _list(self) -> list[int]:
        import psutil
        me = psutil.Process()
        kids = me.children(recursive=True) if self.tree else []
        self._pids = [me.pid] + [k.pid for k in kids]
        self._listed = time.monotonic()
        return self._pids

    def now(self) -> int:
        pids = self._pids if time.monotonic() - self._listed < 1.0 else self._list()
        total = 0
        for pid in pids:
            try:
                with open(f"/proc/{pid}/statm", "rb") as f:
                    total += int(f.read().split()[1]) * 4096
            except (OSError, ValueError, IndexError):
                pass
        return total

    def _run(self) -> None:
        while not self._stop:
            self.peak = max(self.peak, self.now())
            time.sleep(0.01)

    def __enter__(self) -> "Peak":
        self.peak = self.now()
        self.t.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop = True
        self.t.join()
        self.peak = max(self.peak, self.now())


def _raw_floor(n: int, size: int) -> float:
    """Make ``n`` values of ``size`` bytes in one process and read them in another."""
    code = ("import os, sys, struct\n"
            "n, size, fd = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])\n"
            "for i in range(n):\n"
            "    b = bytes([i % 256]) * size\n"
            "    view = memoryview(b)\n"
            "    while view:\n"
            "        view = view[os.write(fd, view):]\n")
    r, w = os.pipe()
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", code, str(n), str(size), str(w)], pass_fds=[w])
    os.close(w)
    total = 0
    check = 0
    with os.fdopen(r, "rb", buffering=0) as f:
        for _i in range(n):
            b = bytearray(size)
            view = memoryview(b)
            got = 0
            while got < size:
                k = f.readinto(view[got:])
                if not k:
                    raise RuntimeError("raw floor: the producer ended early")
                got += k
            total += len(b)
            check += b[0]
    p.wait()
    dt = time.perf_counter() - t
    assert total == n * size and check == sum(i % 256 for i in range(n))
    return dt


def child_m1(n: int) -> dict[str, Any]:
    import taskflow
    from taskflow import task, wait_on

    @task(returns=bytes)
    def produce(i: int, size: int) -> bytes:
        return bytes([i % 256]) * size

    @task(returns=int)
    def consume(b: bytes) -> int:
        return len(b) + b[0]

    out: dict[str, Any] = {"tasks": 2 * n}
    with taskflow.Runtime(workers=2, echo_logs=False):
        wait_on([consume(produce(i, 1024)) for i in range(200)])       # warm-up
        for label, size in (("1KiB", 1024), ("1MiB", MiB)):
            with Peak() as pk:
                t = time.perf_counter()
                res = wait_on([consume(produce(i, size)) for i in range(n)])
                dt = time.perf_counter() - t
            ok = res == [size + i % 256 for i in range(n)]
            out[label] = {"wall_s": dt, "peak_rss_all_bytes": pk.peak, "ok": ok}
            del res
    out["raw_bytes_s"] = _raw_floor(n, MiB)
    floor = out["1KiB"]["wall_s"] + out["raw_bytes_s"]
    out["wall_over_floor"] = out["1MiB"]["wall_s"] / floor
    return out


def child_m2(mb: int, links: int) -> dict[str, Any]:
    import numpy as np
    import taskflow
    from taskflow import task, wait_on

    @task()
    def make(nbytes: int) -> Any:
        return np.ones(nbytes // 8)

    @task()
    def step(a: Any) -> Any:
        return a + 1.0

    @task()
    def check(a: Any) -> tuple[float, float, int]:
        return float(a[0]), float(a[-1]), int(a.nbytes)

    size = mb * 10**6
    with taskflow.Runtime(workers=2, echo_logs=False):
        wait_on(check(step(make(8 * 1024))))                          # warm-up (numpy loaded)
        time.sleep(0.3)
        with Peak() as pk:
            base = pk.now()
            t = time.perf_counter()
            a = make(size)
            for _ in range(links):
                a = step(a)
            got = wait_on(check(a))
            dt = time.perf_counter() - t
    ok = got == (1.0 + links, 1.0 + links, size)
    return {"array_bytes": size, "links": links, "wall_s": dt, "ok": ok,
            "idle_rss_all_bytes": base, "peak_rss_all_bytes": pk.peak,
            "peak_over_idle_bytes": pk.peak - base,
            "peak_over_idle_x_array": (pk.peak - base) / size,
            "peak_x_array": pk.peak / size}


def child_x(values: int, mb: int) -> dict[str, Any]:
    import taskflow
    from taskflow import constraint, task, wait_on
    from taskflow.providers.cluster import NodeConfig
    from taskflow.providers.ssh import SSHProvider

    @constraint(memory_size=8)                # only h1 has that much (declared)
    @task(returns=bytes)
    def make(i: int, size: int) -> bytes:
        return bytes([i % 256]) * size

    @constraint(computing_units=2)            # only h2 has two slots
    @task(returns=int)
    def read(b: bytes) -> int:
        return len(b) + b[0]

    env = _testbed_env()
    tb = os.environ.get("TF_TB", "/tmp/taskflow-tb")
    hosts = env["TF_TB_HOSTS"].split()[:2]
    nodes = [NodeConfig(name="h1", host=hosts[0], user="root", identity_file=env["TF_TB_KEY"],
                        computing_units=1, memory=16, python=sys.executable,
                        working_dir=f"{tb}/bench-h1", shared_fs=False),
             NodeConfig(name="h2", host=hosts[1], user="root", identity_file=env["TF_TB_KEY"],
                        computing_units=2, memory=4, python=sys.executable,
                        working_dir=f"{tb}/bench-h2", shared_fs=False)]
    provider = SSHProvider(nodes, known_hosts=env["TF_TB_KNOWN_HOSTS"], heartbeat_timeout=60)
    size = mb * 10**6
    with taskflow.Runtime(providers=[provider], echo_logs=False,
                          run_dir=os.path.join(tb, "bench-runs")):
        assert wait_on(read(make(1, 1024))) == 1025                  # warm-up
        time.sleep(0.3)
        with Peak(tree=False) as pk:
            base = pk.now()
            t = time.perf_counter()
            got = wait_on([read(make(i, size)) for i in range(values)])
            dt = time.perf_counter() - t
    ok = got == [size + i % 256 for i in range(values)]
    return {"values": values, "value_bytes": size, "wall_s": dt, "ok": ok,
            "master_idle_rss_bytes": base, "master_peak_rss_bytes": pk.peak,
            "master_peak_over_idle_bytes": pk.peak - base,
            "moved_MB_per_s": values * size / 1e6 / dt}


def _testbed_env() -> dict[str, str]:
    import testbed
    return testbed.hosts_env(os.environ.get("TF_TB", testbed.TB))


# -- the parent -----------------------------------------------------------------------------
def _run_child(kind: str, args: list[str], src: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, str(ROOT)]),
                   TASKFLOW_RUN_DIR=os.path.join(tmp, "runs"))
        subprocess.run([sys.executable, __file__, "child", kind, out, *args], check=True,
                       env=env, cwd=tmp, timeout=3600)
        with open(out) as f:
            result: dict[str, Any] = json.load(f)
    return result


def _with_testbed(fn: Any) -> Any:
    import testbed
    if os.geteuid() != 0:
        sys.exit("X needs root (the SSH testbed's network namespaces)")
    tb = os.environ.get("TF_TB", "/tmp/taskflow-tb")
    script = ROOT / "testbed" / "ssh_hosts.sh"
    os.makedirs(tb, exist_ok=True)
    lock = testbed.lock()
    was_up = os.path.exists(os.path.join(tb, "hosts.env"))
    subprocess.run(["bash", str(script), "up", "2"], check=True, env=dict(os.environ, TF_TB=tb))
    try:
        return fn()
    finally:
        if not was_up:
            subprocess.run(["bash", str(script), "down"], env=dict(os.environ, TF_TB=tb))
        lock.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="M1,M2")
    ap.add_argument("--src", default=str(ROOT / "src"), help="the taskflow checkout to run")
    ap.add_argument("--m1-tasks", type=int, default=20000)
    ap.add_argument("--m2-mb", type=int, default=100)
    ap.add_argument("--x-values", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    res: dict[str, Any] = {"src": a.src, "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
                           "cores": os.cpu_count()}
    for kind in a.only.split(","):
        runs = []
        for _ in range(a.repeat):
            if kind == "M1":
                runs.append(_run_child("M1", [str(a.m1_tasks)], a.src))
            elif kind == "M2":
                runs.append(_run_child("M2", [str(a.m2_mb), "10"], a.src))
            elif kind == "X":
                runs.append(_with_testbed(lambda: _run_child("X", [str(a.x_values), "100"],
                                                             a.src)))
            else:
                sys.exit(f"unknown workload {kind!r}")
            print(f"{kind}: {json.dumps(runs[-1])}", file=sys.stderr, flush=True)
        res[kind] = runs
    _print(res)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(res, f, indent=2)


def _med(runs: list[dict[str, Any]], *path: str) -> float:
    vals = []
    for r in runs:
        v: Any = r
        for p in path:
            v = v[p]
        vals.append(v)
    return float(statistics.median(vals))


def _print(res: dict[str, Any]) -> None:
    print(f"taskflow at {res['src']}, {res['cores']} cores, {res['date']} (medians)")
    if "M1" in res:
        r = res["M1"]
        print(f"M1 {r[0]['tasks']} tasks: 1 MiB {_med(r, '1MiB', 'wall_s'):.2f} s, peak RSS of "
              f"all processes {_med(r, '1MiB', 'peak_rss_all_bytes') / 1e6:.0f} MB (target < "
              f"1000); 1 KiB {_med(r, '1KiB', 'wall_s'):.2f} s; raw bytes "
              f"{_med(r, 'raw_bytes_s'):.2f} s; wall / (1 KiB + raw) = "
              f"{_med(r, 'wall_over_floor'):.2f} (target <= 1.5); results right: "
              f"{all(x['1MiB']['ok'] and x['1KiB']['ok'] for x in r)}")
    if "M2" in res:
        r = res["M2"]
        print(f"M2 {r[0]['array_bytes'] / 1e6:.0f} MB x {r[0]['links']} links: "
              f"{_med(r, 'wall_s'):.2f} s, peak RSS of all processes "
              f"{_med(r, 'peak_rss_all_bytes') / 1e6:.0f} MB ({_med(r, 'peak_x_array'):.2f} x "
              f"the array), over the idle run {_med(r, 'peak_over_idle_bytes') / 1e6:.0f} MB "
              f"({_med(r, 'peak_over_idle_x_array'):.2f} x; target < 4); right: "
              f"{all(x['ok'] for x in r)}")
    if "X" in res:
        r = res["X"]
        print(f"X {r[0]['values']} x {r[0]['value_bytes'] / 1e6:.0f} MB from h1 to h2 over SSH: "
              f"{_med(r, 'wall_s'):.1f} s ({_med(r, 'moved_MB_per_s'):.0f} MB/s), master peak "
              f"RSS {_med(r, 'master_peak_rss_bytes') / 1e6:.0f} MB, "
              f"{_med(r, 'master_peak_over_idle_bytes') / 1e6:.0f} MB over idle; right: "
              f"{all(x['ok'] for x in r)}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "child":
        kind, out = sys.argv[2], sys.argv[3]
        rest = [int(x) for x in sys.argv[4:]]
        fn = {"M1": child_m1, "M2": child_m2, "X": child_x}[kind]
        result = fn(*rest)
        with open(out, "w") as f:
            json.dump(result, f)
    else:
        main()
