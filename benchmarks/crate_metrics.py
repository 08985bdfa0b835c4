"""A run's record outside taskflow: the crate's cost and /metrics' cost (issue 40's targets).

crate    a run of N tasks (N - 100 no-op calls with an argument, 100 FILE_IN ->
         FILE_OUT tasks) is made, then ``taskflow crate`` of it is timed (build +
         write, the files' sha256 included) and its metadata's size measured.
         Target: 10,000 tasks in under 10 s, metadata under 20 MB.
         ``--large-args``: each no-op call's argument is a list whose pickle is
         over the journal's BY_DIGEST (kept by digest); ``--big-mb M``: one more
         task is given an M MB bytearray (kept by digest: the metadata stays small).
metrics  A-like throughput of N no-op tasks (2 workers, journal on) with /metrics
         served from the master (``--metrics-port``'s server) and scraped every
         second by another process, against the same run without, alternating
         (same sitting). Reports each scrape's latency as the scraper sees it and
         the CPU time it cost the master (its thread's). Targets: throughput
         within 5 %, each scrape under 50 ms.

    python benchmarks/crate_metrics.py crate [--tasks 10000] [--large-args] [--big-mb 50]
    python benchmarks/crate_metrics.py metrics [--tasks 100000] [--repeat 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

CRATE_RUN = r"""
import os, sys, taskflow
from taskflow import FILE_IN, FILE_OUT, task, wait_on, barrier
@task(returns=int)
def noop(x):
    return x
@task(src=FILE_IN, dst=FILE_OUT)
def copy(src, dst):
    with open(src) as f, open(dst, "w") as g:
        g.write(f.read())
@task(returns=int)
def size(blob):
    return len(blob)
n, root, large, big_mb = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1", int(sys.argv[4])
os.makedirs("files", exist_ok=True)
for i in range(100):
    with open(f"files/in{i}.txt", "w") as f:
        f.write("x" * 1000 * (i + 1))
with taskflow.Runtime(workers=2, run_dir=root, echo_logs=False) as rt:
    futs = [noop([i] * 600 if large else i) for i in range(n - 100)]
    if big_mb:
        futs.append(size(bytearray(big_mb * 2**20)))
    for i in range(100):
        copy(f"files/in{i}.txt", f"files/out{i}.txt")
    wait_on(futs)
    barrier()
print(rt.run_dir)
"""

METRICS_RUN = r"""
import json, sys, time, subprocess, taskflow
from taskflow import task, wait_on
@task(returns=int)
def noop(x):
    return x
n, mode, root, scraper = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
with taskflow.Runtime(workers=2, run_dir=root, echo_logs=False) as rt:
    wait_on([noop(i) for i in range(200)])          # warm-up
    server = proc = None
    if mode == "on":
        from taskflow.metrics.server import MetricsServer
        server = MetricsServer(rt).start()
        inner, render = [], server._render
        def timed(read):                    # the scrape's own CPU and wall time, in the master
            c, w = time.thread_time(), time.perf_counter()
            body = render(read)
            inner.append((time.thread_time() - c, time.perf_counter() - w))
            return body
        server._render = timed
        proc = subprocess.Popen([sys.executable, "-c", scraper, server.url],
                                stdout=subprocess.PIPE, text=True)
        time.sleep(1.5)                             # its first scrapes before the work
    t0 = time.perf_counter()
    wait_on([noop(i) for i in range(n)])
    dt = time.perf_counter() - t0
    lat, inner = [], locals().get("inner", [])
    if proc is not None:
        proc.terminate()
        lat = json.loads(proc.communicate()[0] or "[]")
        server.stop()
print(json.dumps({"tps": n / dt, "seconds": dt, "scrapes": lat, "inner": inner}))
"""

SCRAPER = r"""
import json, signal, sys, time, urllib.request
url, lat = sys.argv[1], []
def done(*_):
    print(json.dumps(lat)); sys.exit(0)
signal.signal(signal.SIGTERM, done)
while True:
    t = time.perf_counter()
    body = urllib.request.urlopen(url, timeout=30).read()
    lat.append((time.perf_counter() - t, len(body)))
    time.sleep(max(0.0, 1.0 - (time.perf_counter() - t)))
"""


def crate(n: int, large: bool = False, big_mb: int = 0) -> None:
    with tempfile.TemporaryDirectory() as root:
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", CRATE_RUN, str(n), os.path.join(root, "runs"),
                              "1" if large else "0", str(big_mb)],
                             cwd=root, capture_output=True, text=True, check=True)
        run_dir = out.stdout.strip().splitlines()[-1]
        what = (", each argument by digest" if large else "") + \
            (f", one {big_mb} MB argument" if big_mb else "")
        print(f"run of {n} tasks{what}: {time.perf_counter() - t:.1f} s")
        for attempt in ("first (hashes the files)", "again (digests kept)"):
            t = time.perf_counter()
            subprocess.run([sys.executable, "-m", "taskflow", "crate", run_dir, "-o",
                            os.path.join(root, "crate"), "--force"], check=True, cwd=root,
                           capture_output=True)
            took = time.perf_counter() - t
            size = os.path.getsize(os.path.join(root, "crate", "ro-crate-metadata.json"))
            print(f"taskflow crate, {attempt}: {took:.2f} s (the whole command, Python's start "
                  f"included); metadata {size / 1e6:.1f} MB")


def metrics(n: int, repeat: int) -> None:
    res: dict[str, list] = {"off": [], "on": []}
    with tempfile.TemporaryDirectory() as root:
        for i in range(repeat):
            for mode in (("off", "on") if i % 2 == 0 else ("on", "off")):
                out = subprocess.run([sys.executable, "-c", METRICS_RUN, str(n), mode, root,
                                      SCRAPER], cwd=root, capture_output=True, text=True,
                                     check=True)
                r = json.loads(out.stdout.strip().splitlines()[-1])
                res[mode].append(r)
                lat = [x for x, _ in r["scrapes"]]
                cpu = [c for c, _ in r["inner"]]
                extra = (f"; {len(lat)} scrapes, median {statistics.median(lat) * 1e3:.1f} ms, "
                         f"max {max(lat) * 1e3:.1f} ms, {r['scrapes'][-1][1]} bytes; in the "
                         f"master: CPU median {statistics.median(cpu) * 1e3:.1f} ms, max "
                         f"{max(cpu) * 1e3:.1f} ms" if lat else "")
                print(f"metrics {mode:>3}: {r['tps']:8.0f} tasks/s ({r['seconds']:.1f} s){extra}",
                      flush=True)
    off = statistics.median(r["tps"] for r in res["off"])
    on = statistics.median(r["tps"] for r in res["on"])
    every = [x for r in res["on"] for x, _ in r["scrapes"]]
    cpu = [c for r in res["on"] for c, _ in r["inner"]]
    print(f"median: off {off:.0f}, on {on:.0f} tasks/s: {on / off:.3f} of off; scrapes: "
          f"{len(every)}, median {statistics.median(every) * 1e3:.1f} ms, "
          f"max {max(every) * 1e3:.1f} ms (from another process); their CPU time in the "
          f"master: median {statistics.median(cpu) * 1e3:.1f} ms, max {max(cpu) * 1e3:.1f} ms")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["crate", "metrics"])
    ap.add_argument("--tasks", type=int, default=None)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--large-args", action="store_true",
                    help="crate: each no-op call's argument is kept by digest")
    ap.add_argument("--big-mb", type=int, default=0,
                    help="crate: one more task with an argument of this many MB")
    a = ap.parse_args()
    if a.what == "crate":
        crate(a.tasks or 10000, a.large_args, a.big_mb)
    else:
        metrics(a.tasks or 100000, a.repeat)


if __name__ == "__main__":
    main()
