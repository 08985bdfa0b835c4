"""Blocked Cholesky over numpy blocks: taskflow on 2 slots against the sequential run.

Issue 41's figure for fine-grained numeric tasks: a right-looking blocked
Cholesky factorisation of an SPD matrix of ``n x n`` blocks of ``bs x bs``
(default 18 x 18 blocks of 700 x 700: 171 block generations, 18 potrf, 153 trsm,
153 syrk, 816 gemm = 1,311 tasks), each block made by a task, each step a task
that returns a new block. The same functions run in a plain loop in a fresh
interpreter (the sequential run, BLAS with its default threads) and under
taskflow on ``--workers`` slots, in the same sitting, alternating; the sum of
the diagonal of L checks that both computed the same thing.

Reported: walls, sequential wall / taskflow wall (the target: >= 0.8), slots
busy (sum of the task bodies' time / makespan; target >= 1.8 of 2), and where
the slots' time went: the bodies (numpy work, timed inside the tasks), the
executor's own part of a task (its measured run time minus the body: the
values' unpickling and pickling on the executor), and the rest (values copied
between processes, dispatch, waiting for dependencies).

    python benchmarks/blocked_linalg.py [--n 18] [--bs 700] [--workers 2] [--rounds 1]
        [--exec-threads 1] [--seq-threads default]
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

LOG_DIR = os.environ.get("BLA_LOG_DIR", "")


def _note(name: str, t0: float, c0: float) -> None:
    """The body's own time and CPU time, in a file per process (read after the run)."""
    if LOG_DIR:
        with open(os.path.join(LOG_DIR, f"t-{os.getpid()}"), "a") as f:
            f.write(f"{name} {t0} {time.time()} {time.process_time() - c0}\n")


def gen(i: int, j: int, n: int, bs: int) -> np.ndarray:
    t0, c0 = time.time(), time.process_time()
    rng = np.random.default_rng(i * 7919 + j)
    a = rng.random((bs, bs))
    if i == j:                      # symmetric, diagonally dominant: SPD
        a = a + a.T + 2.0 * n * bs * np.eye(bs)
    _note("gen", t0, c0)
    return a


def potrf(a: np.ndarray) -> np.ndarray:
    t0, c0 = time.time(), time.process_time()
    r = np.linalg.cholesky(a)
    _note("potrf", t0, c0)
    return r


def trsm(lkk: np.ndarray, a: np.ndarray) -> np.ndarray:
    t0, c0 = time.time(), time.process_time()
    r = np.linalg.solve(lkk, a.T).T          # a @ inv(lkk).T
    _note("trsm", t0, c0)
    return r


def syrk(lik: np.ndarray, a: np.ndarray) -> np.ndarray:
    t0, c0 = time.time(), time.process_time()
    r = a - lik @ lik.T
    _note("syrk", t0, c0)
    return r


def gemm(lik: np.ndarray, ljk: np.ndarray, a: np.ndarray) -> np.ndarray:
    t0, c0 = time.time(), time.process_time()
    r = a - lik @ ljk.T
    _note("gemm", t0, c0)
    return r


def diag_sum(a: np.ndarray) -> float:
    return float(np.trace(a))


def cholesky(n: int, bs: int, f: dict[str, Any]) -> list[Any]:
    """The factorisation's calls (``f``: the functions, plain or tasks); the diagonal
    blocks' traces."""
    A = [[f["gen"](i, j, n, bs) if j <= i else None for j in range(n)] for i in range(n)]
    for k in range(n):
        A[k][k] = f["potrf"](A[k][k])
        for i in range(k + 1, n):
            A[i][k] = f["trsm"](A[k][k], A[i][k])
        for i in range(k + 1, n):
            for j in range(k + 1, i + 1):
                if i == j:
                    A[i][i] = f["syrk"](A[i][k], A[i][i])
                else:
                    A[i][j] = f["gemm"](A[i][k], A[j][k], A[i][j])
    return [f["diag_sum"](A[k][k]) for k in range(n)]


FUNCS = {"gen": gen, "potrf": potrf, "trsm": trsm, "syrk": syrk, "gemm": gemm,
         "diag_sum": diag_sum}


class _Sim:
    """The calls as a 2-slot schedule with no overhead: each call starts when its inputs
    are made and a slot is free (in call order), lasting the mean body of its kind."""

    def __init__(self, mean: dict[str, float], slots: int) -> None:
        self.mean = mean
        self.free = [0.0] * slots
        self.end = 0.0

    def fn(self, kind: str) -> Any:
        def call(*args: Any) -> float:
            ready = max([a for a in args if isinstance(a, float)] + [0.0])
            i = min(range(len(self.free)), key=self.free.__getitem__)
            t = max(ready, self.free[i]) + self.mean.get(kind, 0.0)
            self.free[i] = t
            self.end = max(self.end, t)
            return t
        return call


def ideal_makespan(n: int, by: dict[str, float], slots: int) -> float:
    """The makespan of the same calls on ``slots`` slots with no cost but the bodies."""
    counts = {"gen": n * (n + 1) // 2, "potrf": n, "trsm": n * (n - 1) // 2,
              "syrk": n * (n - 1) // 2, "gemm": n * (n - 1) * (n - 2) // 6}
    sim = _Sim({k: by.get(k, 0.0) / c for k, c in counts.items() if c}, slots)
    cholesky(n, 0, {k: sim.fn(k) for k in FUNCS})
    return sim.end


def _cpu_of_processes() -> dict[str, float]:
    """CPU seconds of this process's children: agents, executors, the journal writer."""
    import psutil
    out = {"agent": 0.0, "executors": 0.0, "other": 0.0}
    for child in psutil.Process().children():
        try:
            cmd = " ".join(child.cmdline())
            t = child.cpu_times()
            if "taskflow.node" in cmd:
                out["agent"] += t.user + t.system
                for ex in child.children():
                    et = ex.cpu_times()
                    out["executors"] += et.user + et.system
            else:
                out["other"] += t.user + t.system
        except psutil.Error:
            pass
    return out


def count_tasks(n: int) -> int:
    return n * (n + 1) // 2 + n + n * (n - 1) // 2 * 2 + n * (n - 1) * (n - 2) // 6 + n


def _bodies(log_dir: str) -> tuple[float, dict[str, float], float, float, float]:
    """(sum of body times, per kind, first body start, last body end, their CPU time)."""
    total, by, first, last, cpu = 0.0, {}, float("inf"), 0.0, 0.0
    for path in glob.glob(os.path.join(log_dir, "t-*")):
        with open(path) as fh:
            for line in fh:
                name, a, b, c = line.split()
                t0, t1 = float(a), float(b)
                cpu += float(c)
                total += t1 - t0
                by[name] = by.get(name, 0.0) + t1 - t0
                first, last = min(first, t0), max(last, t1)
    return total, by, first, last, cpu


def sequential(n: int, bs: int) -> None:
    """In a fresh interpreter (``--child-seq``): the plain loop; prints JSON."""
    global LOG_DIR
    with tempfile.TemporaryDirectory() as d:
        LOG_DIR = d
        t0 = time.time()
        sums = cholesky(n, bs, FUNCS)
        wall = time.time() - t0
        body, by, _, _, _ = _bodies(d)
    print(json.dumps({"wall": wall, "body": body, "by": by, "check": float(sum(sums))}))


def under_taskflow(n: int, bs: int, workers: int) -> dict[str, Any]:
    """In a fresh interpreter (``--child-tf``): the same calls as tasks."""
    global LOG_DIR
    import taskflow
    from taskflow import task, wait_on
    d = tempfile.mkdtemp()
    LOG_DIR = os.environ["BLA_LOG_DIR"] = d       # (the executors inherit it)
    tasks = {k: task(returns=1)(v) for k, v in FUNCS.items()}
    runs: list[tuple[float, float]] = []

    def on_events(evs: list[Any]) -> None:
        for e in evs:
            if getattr(e, "kind", None) == "done":
                t_start, t_end = e.end[0], e.end[1]
                if t_start and t_end:
                    runs.append((t_start, t_end))

    rt = taskflow.start(workers=workers)
    rt.bus.subscribe(on_events)
    try:
        t0 = time.time()
        sums = wait_on(cholesky(n, bs, tasks))
        wall = time.time() - t0
        cpu = _cpu_of_processes()
        me = os.times()
        cpu["master"] = me.user + me.system
    finally:
        taskflow.stop()
    body, by, first, last, body_cpu = _bodies(d)
    run_sum = sum(b - a for a, b in runs)
    return {"wall": wall, "body": body, "by": by, "run_sum": run_sum, "n_runs": len(runs),
            "cpu": cpu, "body_cpu": body_cpu, "ideal": ideal_makespan(n, by, workers),
            "check": float(sum(sums)), "first_body": first - t0, "last_body": t0 + wall - last}


def _child(flag: str, args: argparse.Namespace, env: dict[str, str]) -> dict[str, Any]:
    cmd = [sys.executable, os.path.abspath(__file__), flag, "--n", str(args.n),
           "--bs", str(args.bs), "--workers", str(args.workers)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)
    return json.loads([x for x in out.stdout.splitlines() if x.startswith("{")][-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=18, help="blocks per side (default 18)")
    ap.add_argument("--bs", type=int, default=700, help="block size (default 700)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--exec-threads", default="1",
                    help="OMP/OPENBLAS threads of the executors ('default': leave unset)")
    ap.add_argument("--seq-threads", default="default",
                    help="OMP/OPENBLAS threads of the sequential run ('default': unset)")
    ap.add_argument("--child-seq", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--child-tf", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child_seq:
        sequential(args.n, args.bs)
        return
    if args.child_tf:
        print(json.dumps(under_taskflow(args.n, args.bs, args.workers)))
        return

    def env_for(threads: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items()
               if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
        if threads != "default":
            env.update(OMP_NUM_THREADS=threads, OPENBLAS_NUM_THREADS=threads,
                       MKL_NUM_THREADS=threads)
        return env

    seqs, tfs = [], []
    for _ in range(args.rounds):
        seqs.append(_child("--child-seq", args, env_for(args.seq_threads)))
        tfs.append(_child("--child-tf", args, env_for(args.exec_threads)))
    seq = sorted(seqs, key=lambda r: r["wall"])[len(seqs) // 2]
    tf = sorted(tfs, key=lambda r: r["wall"])[len(tfs) // 2]
    ok = abs(seq["check"] - tf["check"]) <= 1e-6 * abs(seq["check"])
    w = args.workers
    slots = w * tf["wall"]
    executor_part = max(0.0, tf["run_sum"] - tf["body"])
    rest = slots - tf["run_sum"]
    print(f"blocked Cholesky: {args.n} x {args.n} blocks of {args.bs} x {args.bs}, "
          f"{count_tasks(args.n)} tasks; executors' BLAS threads {args.exec_threads}, "
          f"sequential's {args.seq_threads}; {args.rounds} round(s), median; results "
          f"{'agree' if ok else 'DIFFER'}")
    print(f"sequential wall {seq['wall']:.1f} s (bodies {seq['body']:.1f} s); "
          f"taskflow on {w} slots {tf['wall']:.1f} s; sequential / taskflow "
          f"{seq['wall'] / tf['wall']:.2f} (rounds: "
          + ", ".join(f"{s['wall'] / t['wall']:.2f}" for s, t in zip(seqs, tfs)) + ")")
    print(f"slots busy (task bodies / makespan): {tf['body'] / tf['wall']:.2f} of {w}; "
          f"bodies {tf['body']:.1f} s against {seq['body']:.1f} s sequentially "
          f"({tf['body'] / max(seq['body'], 1e-9):.2f}x)")
    print(f"slot time {slots:.1f} s = bodies {tf['body']:.1f} ({tf['body'] / slots:.0%}) "
          f"+ executor's unpickling/pickling around them {executor_part:.1f} "
          f"({executor_part / slots:.0%}) + copies between processes, dispatch and waiting "
          f"{rest:.1f} ({rest / slots:.0%}); first body {tf['first_body']:.2f} s after the "
          f"first call, last ended {tf['last_body']:.2f} s before the end")
    cpu = tf["cpu"]
    ex_rest = cpu["executors"] - tf["body_cpu"]
    print(f"CPU during the run: executors {cpu['executors']:.1f} s (bodies {tf['body_cpu']:.1f}, "
          f"the rest {ex_rest:.1f}: values read from and written to the agent, (un)pickling, "
          f"their loop), agent {cpu['agent']:.1f} s (holding and copying values, placing), "
          f"master {cpu['master']:.1f} s, journal writer and others {cpu['other']:.1f} s; "
          f"slots without CPU {slots - cpu['executors']:.1f} s of {slots:.1f} (waiting for "
          f"work, for inputs, or for a core: the bodies' wall is {tf['body']:.1f} s for "
          f"{tf['body_cpu']:.1f} s of CPU)")
    print(f"the same calls with no cost but the bodies (taskflow's bodies, {w} slots, call "
          f"order): {tf['ideal']:.1f} s; dependencies alone keep the slots "
          f"{tf['body'] / tf['ideal']:.2f} of {w} busy")
    print("bodies by kind (taskflow / sequential): " + ", ".join(
        f"{k} {tf['by'].get(k, 0):.1f}/{seq['by'].get(k, 0):.1f}" for k in
        ("gen", "potrf", "trsm", "syrk", "gemm")))


if __name__ == "__main__":
    main()
