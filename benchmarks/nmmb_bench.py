"""NMMB-MONARCH: the BASH original against the taskflow port, Table I style.

    python benchmarks/nmmb_bench.py [--config examples/nmmb_monarch/config/bench.nml]
                                    [--workers 2] [--repeat 1] [--stat median|min] [--json PATH]

Builds examples/nmmb_monarch, runs nmmb.sh and then `taskflow run workflow.py`
on the same config (alternating, --repeat times; medians, or minima with --stat min), checks that the
two runs wrote the same files, and prints per-step and total times in the
layout of Table I of the COMPSs paper (BASH, taskflow, speed-up), followed by
the DAG's own bound: max(critical path, total work / slots), computed from
each program's duration as measured in the BASH run (the model holds
NEMS_NODES x NEMS_CUS_PER_NODE slots while it runs), and the same bound from
the durations the taskflow run measured itself.

Step times: BASH, the sum of the step's programs (they run one at a time);
taskflow, the time during which at least one task of the step was running
(steps overlap, so the rows add up to more than the makespan). Totals are
the wall time of each command, interpreter and runtime start included.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EX = os.path.join(ROOT, "examples", "nmmb_monarch")
FIXED = ("smmount", "landuse", "deeptemperature", "roughness", "albedo", "snowalbedo", "vegfrac",
         "soiltype", "stdh", "dust_source", "seaice", "gfdlco2", "lookup_aerosol")
STEPS = ("Initialization", "Fixed", "Variable", "Model", "Post", "Figures")
STEP_OF = {"init": "Initialization", "degrib": "Variable", "prep_winds": "Variable",
           "prep_soil": "Variable", "prep_bc": "Variable", "umo_model": "Model",
           "post_regrid": "Post", "post_diag": "Post", "plot_day": "Figures", "animate": "Figures",
           **{f: "Fixed" for f in FIXED}}


def env_for(workers: int, **extra) -> dict:
    env = dict(os.environ)
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    env.setdefault("NEMS_NODES", "1")
    env.setdefault("NEMS_CUS_PER_NODE", str(min(2, workers)))
    env.update(extra)
    return env


def run_bash(config: str, out: str, workers: int) -> tuple[float, list]:
    t0 = time.perf_counter()
    r = subprocess.run(["bash", os.path.join(EX, "nmmb.sh"), config, out], env=env_for(
        workers, PYTHON=sys.executable), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"nmmb.sh failed:\n{r.stdout}\n{r.stderr}")
    with open(os.path.join(out, "bash_times.tsv")) as f:
        rows = [(row["binary"], int(row["day"]), float(row["seconds"]))
                for row in csv.DictReader(f, delimiter="\t")]
    return wall, rows


def run_taskflow(config: str, out: str, workers: int, scratch: str) -> tuple[float, list]:
    times = os.path.join(scratch, "taskflow_times.tsv")
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "taskflow.cli", "run", "--workers", str(workers),
                        "--run-dir", os.path.join(scratch, "runs"),
                        os.path.join(EX, "workflow.py"), config, out],
                       env=env_for(workers, NMMB_TIMES=times), capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit(f"taskflow run failed:\n{r.stdout}\n{r.stderr}")
    with open(times) as f:
        rows = [(row["name"], float(row["start"]), float(row["end"]))
                for row in csv.DictReader(f, delimiter="\t")]
    return wall, rows


def union(intervals: list) -> float:
    total, end = 0.0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def dag(days: int, dur: dict, model_slots: int) -> tuple[float, float]:
    """(critical path, slot-seconds of work) of the workflow's graph.

    ``dur[(name, day)]`` is a program's duration (day 0 for Initialization,
    Fixed and the animation). The edges are the files workflow.py passes.
    """
    finish: dict = {}

    def node(key, deps):
        finish[key] = max((finish[d] for d in deps), default=0.0) + dur[key]

    node(("init", 0), [])
    for f in FIXED:
        node((f, 0), [("init", 0)])
    for d in range(1, days + 1):
        node(("degrib", d), [("init", 0)])
        node(("prep_winds", d), [("degrib", d), ("smmount", 0)])
        node(("prep_soil", d), [("degrib", d), ("soiltype", 0), ("vegfrac", 0)])
        node(("prep_bc", d), [("prep_winds", d), ("prep_soil", d)])
        prev = ("umo_model", d - 1) if d > 1 else ("init", 0)
        node(("umo_model", d), [("prep_bc", d), ("dust_source", 0), ("roughness", 0), prev])
        node(("post_regrid", d), [("umo_model", d)])
        node(("post_diag", d), [("post_regrid", d), ("lookup_aerosol", 0)])
        node(("plot_day", d), [("post_diag", d)])
    node(("animate", 0), [("post_diag", d) for d in range(1, days + 1)])
    work = sum(v * (model_slots if k[0] == "umo_model" else 1) for k, v in dur.items())
    return max(finish.values()), work


def taskflow_durations(rows: list, days: int) -> dict:
    """Key the taskflow run's task durations like the BASH ones (day by order of start)."""
    seen: dict = {}
    out = {}
    for name, t0, t1 in sorted(rows, key=lambda r: r[1]):
        per_day = name in ("degrib", "prep_winds", "prep_soil", "prep_bc", "umo_model",
                           "post_regrid", "post_diag", "plot_day")
        day = 0
        if per_day:
            seen[name] = seen.get(name, 0) + 1
            day = seen[name]
        out[(name, day)] = t1 - t0
    return out


def same_outputs(a: str, b: str) -> list:
    differ = []
    for d, _, files in os.walk(a):
        for f in files:
            rel = os.path.relpath(os.path.join(d, f), a)
            if rel == "bash_times.tsv":
                continue
            other = os.path.join(b, rel)
            if not os.path.exists(other) or open(other, "rb").read() != open(
                    os.path.join(d, f), "rb").read():
                differ.append(rel)
    return differ


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", default=os.path.join(EX, "config", "bench.nml"))
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--stat", choices=("median", "min"), default="median",
                    help="how the repeats are combined (min resists a shared machine's noise)")
    ap.add_argument("--json", default=os.path.join(ROOT, "benchmarks", "results", "nmmb.json"))
    ap.add_argument("--keep", action="store_true", help="keep the run directories")
    a = ap.parse_args()
    config = os.path.abspath(a.config)

    r = subprocess.run(["make", "-s", "-C", EX], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"building the example failed:\n{r.stdout}{r.stderr}")
    scratch = tempfile.mkdtemp(prefix="nmmb-bench-")
    model_slots = int(env_for(a.workers)["NEMS_NODES"]) * int(env_for(a.workers)["NEMS_CUS_PER_NODE"])
    samples = []
    for i in range(a.repeat):
        order = ("bash", "taskflow") if i % 2 == 0 else ("taskflow", "bash")
        res = {}
        for who in order:
            out = os.path.join(scratch, f"{who}{i}")
            print(f"nmmb_bench: run {i + 1}/{a.repeat}: {who} ...", file=sys.stderr, flush=True)
            if who == "bash":
                res["bash"] = run_bash(config, out, a.workers)
            else:
                res["taskflow"] = run_taskflow(config, out, a.workers, scratch)
        differ = same_outputs(os.path.join(scratch, f"bash{i}"), os.path.join(scratch, f"taskflow{i}"))
        if differ:
            sys.exit(f"nmmb_bench: the two versions wrote different files: {differ}")
        bwall, brows = res["bash"]
        twall, trows = res["taskflow"]
        days = max(d for _, d, _ in brows)
        bdur = {(n, d): s for n, d, s in brows}
        tdur = taskflow_durations(trows, days)
        s = {"bash": {st: sum(v for n, _, v in brows if STEP_OF[n] == st) for st in STEPS},
             "taskflow": {st: union([(t0, t1) for n, t0, t1 in trows if STEP_OF[n] == st])
                          for st in STEPS}}
        s["bash"]["Total"], s["taskflow"]["Total"] = bwall, twall
        s["makespan"] = max(t1 for _, _, t1 in trows) - min(t0 for _, t0, _ in trows)
        s["cp_bash"], s["work_bash"] = dag(days, bdur, model_slots)
        s["cp_tf"], s["work_tf"] = dag(days, tdur, model_slots)
        samples.append(s)

    pick = statistics.median if a.stat == "median" else min
    med = lambda f: pick(f(s) for s in samples)   # noqa: E731
    rows = []
    print(f"\nNMMB-MONARCH ({os.path.relpath(config, ROOT)}, {a.workers} slots, model on "
          f"{model_slots} ranks, {a.stat} of {a.repeat}); outputs byte-identical: yes\n")
    print("| Step | BASH (s) | taskflow (s) | Speed-up |")
    print("|---|---:|---:|---:|")
    for st in STEPS + ("Total",):
        b, t = med(lambda s, st=st: s["bash"][st]), med(lambda s, st=st: s["taskflow"][st])
        rows.append({"step": st, "bash": b, "taskflow": t})
        print(f"| {st} | {b:.2f} | {t:.2f} | {b / t if t else float('nan'):.2f}x |")
    mk = med(lambda s: s["makespan"])
    for label, cp_k, w_k in (("BASH-measured durations", "cp_bash", "work_bash"),
                             ("taskflow-measured durations", "cp_tf", "work_tf")):
        cp, w = med(lambda s, k=cp_k: s[k]), med(lambda s, k=w_k: s[k])
        bound = max(cp, w / a.workers)
        print(f"\nDAG bound from {label}: critical path {cp:.2f} s, work / slots = "
              f"{w:.2f} / {a.workers} = {w / a.workers:.2f} s -> bound {bound:.2f} s; "
              f"taskflow makespan {mk:.2f} s = {mk / bound:.3f} x bound "
              f"(wall with start-up {med(lambda s: s['taskflow']['Total']):.2f} s)")
    os.makedirs(os.path.dirname(a.json), exist_ok=True)
    with open(a.json, "w") as f:
        json.dump({"config": config, "workers": a.workers, "model_slots": model_slots,
                   "samples": samples, "median_rows": rows,
                   "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}, f, indent=1)
    if not a.keep:
        shutil.rmtree(scratch, ignore_errors=True)
    else:
        print(f"\nrun directories kept in {scratch}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
