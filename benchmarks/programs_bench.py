"""P, Q, R: program tasks against the machine's own spawn rate and HyperQueue.

    python benchmarks/programs_bench.py [--only P,Q,R] [--repeat 3] [--peers raw,hq]
                                        [--json PATH]

P  2,000 ``true`` program tasks on W=2 slots: tasks/s. Baseline: a loop of
   ``subprocess.run(["true"])`` in 2 threads (the machine's spawn rate).
Q  a chain of 200 program tasks, each taking the previous one's exit code as
   its argument (``true 0``): ms per task. Baseline: one
   ``subprocess.run(["true", "0"])`` after another (one raw spawn of the same
   command: GNU ``true`` given one argument sets up its locale, to look for
   ``--help``, which costs ~0.2 ms of its CPU here; ``true`` alone would not be
   the command the chain runs). HyperQueue's chain runs ``true 0`` too.
R  2,000 ``cat`` tasks, each reading one small file (FILE_IN) and writing one
   (FILE_OUT, through its stdout): tasks/s. Baseline: the same commands in a
   2-thread loop, stdout to the output file.

M  (``--only M``) the CLI form: 10,000 ``true`` items (``--map-items N``) by
   ``taskflow map --range 1-N -w 2 -- true``, a fresh process timed from its
   start to its exit (start-up, journal and job logs included), with the
   master's peak RSS; against HyperQueue and the raw 2-thread loop. HyperQueue's
   ``hq`` command line is not in its Python package (the bench extra), so its
   ``hq submit --array 1-N -- true`` is taken as its Python API does the same: a
   fresh ``LocalCluster`` (server and one worker of 2 cores) started, one job of
   N ``true`` programs submitted and waited for, the cluster stopped, all timed.

A, B (``--only A,B``; not in the default set): Python function tasks, the
workloads of run.py, against HyperQueue's ``Job.function`` (which starts a
Python interpreter per task, ~8 tasks/s here): taskflow runs 10,000 no-ops
(A, tasks/s) and a chain of 1,000 (B, ms per task), HyperQueue 500 and a chain
of 100 (its rates do not depend on the count; the full sizes would take half
an hour). There is no raw baseline for them.

Runtimes take turns in every repetition (raw, taskflow, hq, then rotated);
figures are medians and the ratios come from the same run.

taskflow: ``Runtime(workers=2)`` with its defaults (journal on; every program
gets its job log files under the run directory). HyperQueue: ``LocalCluster``
with one worker of 2 cores, default per-task stdout/stderr files (as taskflow
keeps its job logs). HyperQueue's Python client waits by polling once a second,
so its time is taken from a last program that writes a timestamp and depends
on all the others (P, R) or ends the chain (Q): the time of the work itself,
not of the poll (which favours HyperQueue; the wait as its client sees it is
recorded too, as ``client_*``).
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results"

P_TASKS = 2_000
Q_CHAIN = 200
R_TASKS = 2_000
A_TASKS, A_TASKS_HQ = 10_000, 500
B_CHAIN, B_CHAIN_HQ = 1_000, 100
W = 2
TRUE = shutil.which("true") or "/bin/true"
CAT = shutil.which("cat") or "/bin/cat"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def make_inputs(root: Path, n: int) -> list[Path]:
    d = root / "in"
    d.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(n):
        p = d / f"in{i}.txt"
        p.write_text(f"input file {i}\n" * 4)
        paths.append(p)
    return paths


def check_outputs(outs: list[Path]) -> None:
    for i, p in enumerate(outs):
        if p.read_text() != f"input file {i}\n" * 4:
            raise AssertionError(f"R: {p} has the wrong content")


# -- raw: the machine -----------------------------------------------------------------
def _threads(n: int, work: Callable[[int], None]) -> float:
    """Run work(0..n-1) on W threads pulling from one counter; seconds."""
    lock = threading.Lock()
    nxt = [0]

    def loop() -> None:
        while True:
            with lock:
                i = nxt[0]
                nxt[0] += 1
            if i >= n:
                return
            work(i)

    ths = [threading.Thread(target=loop) for _ in range(W)]
    t = time.perf_counter()
    for th in ths:
        th.start()
    for th in ths:
        th.join()
    return time.perf_counter() - t


def raw_p(tmp: Path) -> dict[str, float]:
    def one(i: int) -> None:
        subprocess.run([TRUE], check=True)
    s = _threads(P_TASKS, one)
    return {"tasks_per_s": P_TASKS / s, "seconds": s}


def raw_q(tmp: Path) -> dict[str, float]:
    t = time.perf_counter()
    for _ in range(Q_CHAIN):
        subprocess.run([TRUE, "0"], check=True)     # (the command each link of Q runs)
    s = time.perf_counter() - t
    return {"ms_per_task": s / Q_CHAIN * 1e3, "seconds": s}


def raw_r(tmp: Path) -> dict[str, float]:
    ins = make_inputs(tmp, R_TASKS)
    outs = [tmp / f"out{i}.txt" for i in range(R_TASKS)]

    def one(i: int) -> None:
        with open(outs[i], "wb") as f:
            subprocess.run([CAT, str(ins[i])], stdout=f, check=True)
    s = _threads(R_TASKS, one)
    check_outputs(outs)
    return {"tasks_per_s": R_TASKS / s, "seconds": s}


# -- taskflow ---------------------------------------------------------------------------
class TaskflowSession:
    """A warmed-up taskflow runtime with the three program tasks."""

    def __init__(self, tmp: Path) -> None:
        import taskflow
        from taskflow import FILE_IN, FILE_OUT_STDOUT, binary, task, wait_on

        @binary(binary="true")
        @task()
        def true_prog():  # type: ignore[no-untyped-def]
            pass

        @binary(binary="true")
        @task(returns=int)
        def true_after(code):  # type: ignore[no-untyped-def]
            pass

        @binary(binary="cat")
        @task(src=FILE_IN, dst=FILE_OUT_STDOUT)
        def cat(src, dst):  # type: ignore[no-untyped-def]
            pass

        @task(returns=1)
        def noop(x):  # type: ignore[no-untyped-def]
            return x

        @task(returns=1)
        def inc(x):  # type: ignore[no-untyped-def]
            return x + 1

        self.tf, self.wait_on = taskflow, wait_on
        self.true_prog, self.true_after, self.cat = true_prog, true_after, cat
        self.noop, self.inc = noop, inc
        self.tmp = tmp
        self.old = os.getcwd()
        os.chdir(tmp)
        self.rt = taskflow.Runtime(workers=W, run_dir=str(tmp / "runs")).start()
        wait_on([true_prog() for _ in range(4 * W)])       # both slots, every function once
        wait_on(true_after(true_after(0)))
        warm = make_inputs(tmp / "warm", 4)
        cat(str(warm[0]), str(tmp / "warm" / "o.txt"))
        taskflow.barrier()
        wait_on([noop(i) for i in range(200)])
        wait_on(inc(inc(0)))
        self.n = 0

    def run(self, key: str) -> dict[str, float]:
        self.n += 1
        wait_on = self.wait_on
        if key == "A":
            t = time.perf_counter()
            vals = wait_on([self.noop(i) for i in range(A_TASKS)])
            s = time.perf_counter() - t
            if vals != list(range(A_TASKS)):
                raise AssertionError("A: wrong results")
            return {"tasks_per_s": A_TASKS / s, "seconds": s}
        if key == "B":
            t = time.perf_counter()
            f = self.inc(0)
            for _ in range(B_CHAIN - 1):
                f = self.inc(f)
            if wait_on(f) != B_CHAIN:
                raise AssertionError("B: wrong result")
            s = time.perf_counter() - t
            return {"ms_per_task": s / B_CHAIN * 1e3, "seconds": s}
        if key == "P":
            t = time.perf_counter()
            codes = wait_on([self.true_prog() for _ in range(P_TASKS)])
            s = time.perf_counter() - t

            if codes != [0] * P_TASKS:
                raise AssertionError("P: wrong exit codes")
            return {"tasks_per_s": P_TASKS / s, "seconds": s}
        if key == "Q":
            t = time.perf_counter()
            f = self.true_after(0)
            for _ in range(Q_CHAIN - 1):
                f = self.true_after(f)
            v = wait_on(f)
            s = time.perf_counter() - t
            if v != 0:
                raise AssertionError(f"Q: exit code {v!r}")
            return {"ms_per_task": s / Q_CHAIN * 1e3, "seconds": s}
        d = self.tmp / f"r{self.n}"
        ins = make_inputs(d, R_TASKS)
        outs = [d / f"out{i}.txt" for i in range(R_TASKS)]
        t = time.perf_counter()
        for a, b in zip(ins, outs):
            self.cat(str(a), str(b))
        self.tf.barrier()
        s = time.perf_counter() - t
        check_outputs(outs)
        shutil.rmtree(d, ignore_errors=True)
        return {"tasks_per_s": R_TASKS / s, "seconds": s}

    def close(self) -> None:
        try:
            self.rt.stop()
        finally:
            os.chdir(self.old)


# -- M: the command line, start to finish ------------------------------------------------
M_ITEMS = 10_000


def taskflow_m(tmp: Path) -> dict[str, float]:
    """``taskflow map --range 1-N -- true`` in a fresh process; its master's peak RSS."""
    import psutil

    cmd = [sys.executable, "-m", "taskflow.cli", "map", "--range", f"1-{M_ITEMS}", "-w", str(W),
           "--no-progress", "--run-dir", str(tmp / "runs"), "--", TRUE]
    t = time.perf_counter()
    p = subprocess.Popen(cmd, cwd=tmp, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = 0
    proc = psutil.Process(p.pid)
    while p.poll() is None:
        try:
            peak = max(peak, proc.memory_info().rss)
        except psutil.Error:
            break
        time.sleep(0.05)
    err = p.communicate()[1]
    s = time.perf_counter() - t
    if p.returncode != 0:
        raise AssertionError(f"M: taskflow map exited {p.returncode}: {err.decode()[-500:]}")
    return {"tasks_per_s": M_ITEMS / s, "seconds": s, "master_peak_rss_mb": peak / 2**20,
            "count": M_ITEMS}


def hq_m(tmp: Path) -> dict[str, float]:
    """HyperQueue's ``hq submit --array 1-N -- true`` through its Python API (see the
    module docstring), cluster start and stop included."""
    from hyperqueue import Job, LocalCluster
    from hyperqueue.cluster import WorkerConfig

    t = time.perf_counter()
    (tmp / "server").mkdir(exist_ok=True)
    cluster = LocalCluster(server_dir=str(tmp / "server"))
    try:
        cluster.start_worker(WorkerConfig(cores=W))
        client = cluster.client()
        job = Job(tmp)
        for _ in range(M_ITEMS):
            job.program([TRUE])
        client.wait_for_jobs([client.submit(job)])
    finally:
        cluster.stop()
    s = time.perf_counter() - t
    return {"tasks_per_s": M_ITEMS / s, "seconds": s, "count": M_ITEMS}


def raw_m(tmp: Path) -> dict[str, float]:
    s = _threads(M_ITEMS, lambda i: subprocess.run([TRUE], check=True) and None)
    return {"tasks_per_s": M_ITEMS / s, "seconds": s, "count": M_ITEMS}


MAP_RUN: dict[str, Callable[[Path], dict[str, float]]] = {
    "raw": raw_m, "taskflow": taskflow_m, "hq": hq_m}


# -- HyperQueue -----------------------------------------------------------------------
def hq_noop(x: int) -> int:
    """A, B for HyperQueue (module level: its workers import it by name)."""
    return x


def _stamp_task(job: Any, stamp: Path, deps: list[Any]) -> Any:
    return job.program(["sh", "-c", f"date +%s.%N > {stamp}"], deps=deps)


class HqSession:
    """A HyperQueue LocalCluster with one worker of W cores."""

    def __init__(self, tmp: Path) -> None:
        from hyperqueue import Job, LocalCluster
        from hyperqueue.cluster import WorkerConfig

        from hyperqueue.task.function import PythonEnv

        self.Job = Job
        server = tmp / "hq-server"
        server.mkdir()
        self.cluster = LocalCluster(server_dir=str(server))
        self.cluster.start_worker(WorkerConfig(cores=W))
        # its function tasks run `python3 -c ...` per task: this interpreter, not PATH's
        self.client = self.cluster.client(python_env=PythonEnv(python_bin=sys.executable))
        self.work = tmp / "hq-work"
        self.work.mkdir()
        self.tmp = tmp
        self.n = 0
        job = Job(self.work)
        for _ in range(4 * W):
            job.program([TRUE])
        stamp = self.work / "warm.stamp"
        _stamp_task(job, stamp, list(job.tasks))
        self._run(job, stamp)

    def _run(self, job: Any, stamp: Path) -> tuple[float, float]:
        t = time.time()
        self.client.wait_for_jobs([self.client.submit(job)])
        t_client = time.time() - t
        return float(stamp.read_text()) - t, t_client

    def run(self, key: str) -> dict[str, float]:
        self.n += 1
        job = self.Job(self.work)
        stamp = self.work / f"{key}{self.n}.stamp"
        if key == "A":
            tasks = [job.function(hq_noop, args=(i,)) for i in range(A_TASKS_HQ)]
            _stamp_task(job, stamp, tasks)
            s, c = self._run(job, stamp)
            return {"tasks_per_s": A_TASKS_HQ / s, "seconds": s,
                    "client_tasks_per_s": A_TASKS_HQ / c, "count": A_TASKS_HQ}
        if key == "B":
            prev = job.function(hq_noop, args=(0,))
            for i in range(B_CHAIN_HQ - 1):
                prev = job.function(hq_noop, args=(i,), deps=[prev])
            _stamp_task(job, stamp, [prev])
            s, c = self._run(job, stamp)
            return {"ms_per_task": s / B_CHAIN_HQ * 1e3, "seconds": s,
                    "client_ms_per_task": c / B_CHAIN_HQ * 1e3, "count": B_CHAIN_HQ}
        if key == "P":
            tasks = [job.program([TRUE]) for _ in range(P_TASKS)]
            _stamp_task(job, stamp, tasks)
            s, c = self._run(job, stamp)
            return {"tasks_per_s": P_TASKS / s, "seconds": s, "client_tasks_per_s": P_TASKS / c}
        if key == "Q":
            prev = job.program([TRUE, "0"])
            for _ in range(Q_CHAIN - 2):
                prev = job.program([TRUE, "0"], deps=[prev])
            _stamp_task(job, stamp, [prev])     # the chain's last link writes the time
            s, c = self._run(job, stamp)
            return {"ms_per_task": s / Q_CHAIN * 1e3, "seconds": s,
                    "client_ms_per_task": c / Q_CHAIN * 1e3}
        d = self.tmp / f"hq-r{self.n}"
        ins = make_inputs(d, R_TASKS)
        outs = [d / f"out{i}.txt" for i in range(R_TASKS)]
        tasks = [job.program([CAT, str(a)], stdout=str(b)) for a, b in zip(ins, outs)]
        _stamp_task(job, stamp, tasks)
        s, c = self._run(job, stamp)
        check_outputs(outs)
        shutil.rmtree(d, ignore_errors=True)
        return {"tasks_per_s": R_TASKS / s, "seconds": s, "client_tasks_per_s": R_TASKS / c}

    def close(self) -> None:
        self.cluster.stop()


class RawSession:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.n = 0

    def run(self, key: str) -> dict[str, float]:
        self.n += 1
        d = self.tmp / f"{key}{self.n}"
        d.mkdir()
        try:
            return RAW[key](d)
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def close(self) -> None:
        pass


def tree_cpu() -> tuple[float, float]:
    """CPU seconds used so far by this process and its descendants: (all of it, the part of
    the children they reaped). In P, Q and R what was reaped is the programs' own CPU
    (the raw loop's, taskflow's executors', HyperQueue's worker's): the rest is what
    each runtime spends around them (its "runtime CPU"), which a loaded machine moves
    less than a rate."""
    import psutil

    total = reaped = 0.0
    me = psutil.Process()
    for p in [me] + me.children(recursive=True):
        try:
            c = p.cpu_times()
        except psutil.Error:
            continue
        total += c.user + c.system + c.children_user + c.children_system
        reaped += c.children_user + c.children_system
    return total, reaped


# -- the run ----------------------------------------------------------------------------
RAW = {"P": raw_p, "Q": raw_q, "R": raw_r, "M": raw_m}
METRIC = {"M": ("tasks_per_s", True), "P": ("tasks_per_s", True), "Q": ("ms_per_task", False), "R": ("tasks_per_s", True),
          "A": ("tasks_per_s", True), "B": ("ms_per_task", False)}
COUNT = {"M": M_ITEMS, "P": P_TASKS, "Q": Q_CHAIN, "R": R_TASKS, "A": A_TASKS, "B": B_CHAIN}
LABELS = {"raw": "raw spawn loop (2 threads; Q: sequential)", "taskflow": "taskflow",
          "hq": "HyperQueue"}


SESSIONS: dict[str, Callable[[Path], Any]] = {"raw": RawSession, "taskflow": TaskflowSession,
                                              "hq": HqSession}


def table(names: list[str], keys: list[str], med: dict[str, dict[str, float]],
          spread: dict[str, dict[str, list[float]]], cpu: dict[str, dict[str, float]],
          own: dict[str, dict[str, float]] | None = None) -> str:
    """The rates (medians, min-max), the CPU per task of everything, and the runtime's own
    CPU per task (everything but the programs: :func:`tree_cpu`)."""
    own = own or {}
    own_keys = [k for k in keys if k != "M"]

    def fmt(k: str, v: float) -> str:
        return f"{v:,.0f}" if METRIC[k][1] else f"{v:.3g}"

    head = ["runtime"] + [f"{k} {METRIC[k][0]} {'↑' if METRIC[k][1] else '↓'} (min-max)"
                          for k in keys] + [f"{k} CPU ms/task" for k in keys] \
        + [f"{k} runtime CPU ms/task" for k in own_keys]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for n in names:
        row = [LABELS[n]]
        for k in keys:
            v = med.get(n, {}).get(k)
            lo, hi = spread.get(n, {}).get(k, [None, None])
            row.append("—" if v is None else f"{fmt(k, v)} ({fmt(k, lo)}-{fmt(k, hi)})")
        for per, ks in ((cpu, keys), (own, own_keys)):
            for k in ks:
                c = per.get(n, {}).get(k)
                row.append("—" if c is None else f"{c:.3f}" if per is own else f"{c:.2f}")
        lines.append("| " + " | ".join(row) + " |")
    if "taskflow" in names:
        for n in names:
            if n == "taskflow":
                continue
            row = [f"**taskflow / {LABELS[n]}**"]
            for k in keys:
                a, b = med.get("taskflow", {}).get(k), med.get(n, {}).get(k)
                row.append("—" if not a or not b else f"{a / b:.3g}")
            for per, ks in ((cpu, keys), (own, own_keys)):
                for k in ks:
                    a, b = per.get("taskflow", {}).get(k), per.get(n, {}).get(k)
                    row.append("—" if not a or not b else f"{a / b:.3g}")
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default="P,Q,R")
    p.add_argument("--peers", default="raw,hq", help="besides taskflow: raw, hq")
    p.add_argument("--no-taskflow", action="store_true")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", default=str(RESULTS / "programs.json"))
    p.add_argument("--map-items", type=int, default=COUNT["M"], help="M: the items of the map")
    args = p.parse_args(argv)
    global M_ITEMS
    M_ITEMS = COUNT["M"] = args.map_items
    keys = [k for k in args.only.upper().split(",") if k]
    names = ([] if args.no_taskflow else ["taskflow"]) + [n for n in args.peers.split(",") if n]
    if "hq" in names:
        try:
            import hyperqueue  # noqa: F401
        except ImportError:
            log("hyperqueue is not installed (pip install -e '.[bench]'); skipped")
            names.remove("hq")
    RESULTS.mkdir(parents=True, exist_ok=True)
    samples: dict[str, dict[str, list[float]]] = {n: {k: [] for k in keys} for n in names}
    cpu: dict[str, dict[str, list[float]]] = {n: {k: [] for k in keys} for n in names}
    runtime_cpu: dict[str, dict[str, list[float]]] = {n: {k: [] for k in keys} for n in names}
    raw_samples: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
    root = Path(tempfile.mkdtemp(prefix="programs-", dir=RESULTS))
    sessions: dict[str, Any] = {}
    try:
        for n in names:
            t = time.perf_counter()
            (root / n).mkdir()
            if keys == ["M"]:           # M starts its own runtimes, each time
                continue
            sessions[n] = SESSIONS[n](root / n)
            log(f"{n}: started and warmed up in {time.perf_counter() - t:.1f} s")
        # Workload by workload, the runtimes back to back (order rotated each time), so
        # the machine's drift hits the pair being compared alike.
        for rep in range(args.repeat):
            for i, k in enumerate(keys):
                j = (rep + i) % len(names)
                for n in names[j:] + names[:j]:
                    if n == "raw" and k not in RAW:
                        continue
                    c0 = tree_cpu()
                    try:
                        if k == "M":
                            d = root / n / f"m{rep}"
                            d.mkdir()
                            res = MAP_RUN[n](d)
                            shutil.rmtree(d, ignore_errors=True)
                        else:
                            res = sessions[n].run(k)
                    except Exception as exc:  # one peer's failure must not end the run
                        log(f"rep {rep + 1} {k} {n}: FAILED {type(exc).__name__}: {exc}")
                        raw_samples[n].append({"key": k, "error": f"{type(exc).__name__}: {exc}"})
                        continue
                    n_tasks = int(res.get("count", COUNT[k]))
                    c1 = tree_cpu()
                    res["cpu_ms_per_task"] = (c1[0] - c0[0]) / n_tasks * 1e3
                    own = None
                    if k != "M":        # (M's runtime is a child process: all of it reaped)
                        own = res["runtime_cpu_ms_per_task"] = \
                            (c1[0] - c0[0] - (c1[1] - c0[1])) / n_tasks * 1e3
                        runtime_cpu[n][k].append(own)
                    raw_samples[n].append(dict(res, key=k))
                    samples[n][k].append(res[METRIC[k][0]])
                    cpu[n][k].append(res["cpu_ms_per_task"])
                    rss = res.get("master_peak_rss_mb")
                    log(f"rep {rep + 1} {k} {n}: {METRIC[k][0]} {res[METRIC[k][0]]:,.4g}, "
                        f"CPU {res['cpu_ms_per_task']:.2f} ms/task"
                        + (f" (runtime {own:.2f})" if own is not None else "")
                        + (f", master peak RSS {rss:.0f} MB" if rss else ""))
    finally:
        for n, sess in sessions.items():
            try:
                sess.close()
            except Exception as exc:
                log(f"{n}: stop failed: {exc}")
        shutil.rmtree(root, ignore_errors=True)
    med = {n: {k: statistics.median(v) for k, v in per.items() if v} for n, per in samples.items()}
    spread = {n: {k: [min(v), max(v)] for k, v in per.items() if v} for n, per in samples.items()}
    cpu_med = {n: {k: statistics.median(v) for k, v in per.items() if v} for n, per in cpu.items()}
    own_med = {n: {k: statistics.median(v) for k, v in per.items() if v}
               for n, per in runtime_cpu.items()}
    out = table(names, keys, med, spread, cpu_med, own_med)
    print(out)
    meta = {"date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "python": platform.python_version(), "cores": os.cpu_count(), "repeat": args.repeat}
    try:
        from importlib.metadata import version
        meta["hyperqueue"] = version("hyperqueue")
    except Exception:
        pass
    Path(args.json).write_text(json.dumps({"meta": meta, "medians": med, "spread": spread,
                                           "cpu_ms_per_task": cpu_med,
                                           "runtime_cpu_ms_per_task": own_med,
                                           "samples": raw_samples, "table": out}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
