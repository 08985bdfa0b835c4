"""Run the taskflow benchmarks against its peers and print a markdown table.

    python benchmarks/run.py [--only A,B,...] [--all] [--peers dask,parsl,ppe,seq]
                             [--repeat 3] [--json out.json] [--workers 2]

Runtimes are interleaved (taskflow, dask, parsl, ... then again, rotating the
order each repetition) so that slow drifts of a noisy machine hit all of them
alike; figures are medians of --repeat. Only same-run ratios mean much.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import gc
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
# Workers started through a shell (Parsl, maybe taskflow) must import benchmarks.*
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p
)

from benchmarks import workloads  # noqa: E402
from benchmarks.peers import ADAPTERS, descendants, load, reap  # noqa: E402
from benchmarks.report import markdown_table  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
CHILD = Path(__file__).resolve().parent / "child.py"
DEFAULT_WORKLOADS = "A,B,C,D,E"
START_TIMEOUT_S = 120.0

Samples = dict[str, dict[str, list[dict[str, Any]]]]


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise TimeoutError in the main thread after ``seconds`` (SIGALRM)."""

    def _fire(signum: int, frame: Any) -> None:
        raise TimeoutError(f"timed out after {seconds:.0f} s")

    old = signal.signal(signal.SIGALRM, _fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def rotated(names: list[str], k: int) -> list[str]:
    k %= max(len(names), 1)
    return names[k:] + names[:k]


def run_session(name: str, mod: ModuleType, keys: list[str], workers: int, samples: Samples) -> None:
    """Start one runtime, warm it up, run ``keys`` once each, stop it."""
    before = descendants()
    handle = None
    try:
        with deadline(START_TIMEOUT_S):
            t = time.perf_counter()
            handle = mod.start(workers)
            workloads.warm_up(handle, workers)
            log(f"  {name}: started and warmed up with {workers} workers in {time.perf_counter() - t:.1f} s")
        for key in keys:
            wl = workloads.WORKLOADS[key]
            assert wl.run is not None
            gc.collect()
            try:
                with deadline(wl.timeout_s):
                    res = wl.run(handle)
                log(f"  {name} {key}: {fmt_metrics(res)}")
            except Exception as exc:  # record and go on: one peer's failure must not end the run
                res = {"error": f"{type(exc).__name__}: {exc}"}
                log(f"  {name} {key}: FAILED {res['error']}")
            samples[name][key].append(res)
    except Exception as exc:
        err = f"start/warm-up failed: {type(exc).__name__}: {exc}"
        log(f"  {name}: {err}\n{traceback.format_exc()}")
        for key in keys:
            samples[name][key].append({"error": err})
    finally:
        if handle is not None:
            try:
                with deadline(60):
                    mod.stop(handle)
            except Exception as exc:
                log(f"  {name}: stop failed: {type(exc).__name__}: {exc}")
        left = reap(before, grace=3.0)
        if left:
            log(f"  {name}: killed {len(left)} leftover process(es): {left}")


def compile_sources() -> None:
    """Byte-compile taskflow and benchmarks/ before E and G, as ``pip install`` does for
    the peers in site-packages: a checkout run with PYTHONDONTWRITEBYTECODE=1 (or a
    read-only one) would otherwise compile every module in each fresh interpreter,
    which E would count against taskflow alone."""
    import compileall

    dirs = {str(ROOT / "benchmarks")}
    try:
        import taskflow

        dirs.add(os.path.dirname(os.path.abspath(taskflow.__file__)))
    except ImportError:
        pass
    for d in dirs:
        compileall.compile_dir(d, quiet=1)


def run_child(kind: str, name: str, workers: int, arg: str, timeout: float) -> dict[str, Any]:
    """Run benchmarks/child.py in a fresh interpreter and return its figures."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    fd, out_path = tempfile.mkstemp(prefix=f"{kind}-{name}-", suffix=".json", dir=RESULTS)
    os.close(fd)
    log_path = RESULTS / f"child-{kind}-{name}.log"
    before = descendants()
    with open(log_path, "w") as logf:
        t0 = time.time()
        proc = subprocess.Popen(
            [sys.executable, str(CHILD), kind, name, str(workers), arg if kind == "G" else repr(t0), out_path],
            stdout=logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=str(ROOT),
        )
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = None
        t_exit = time.time()
    left = reap(before, grace=2.0)
    try:
        text = Path(out_path).read_text()
        res: dict[str, Any] = json.loads(text) if text else {}
    finally:
        os.unlink(out_path)
    if rc != 0 or not res:
        tail = log_path.read_text()[-800:]
        return {"error": f"child exit {rc}; log {log_path.name}: {tail.strip()[-300:]}"}
    if kind == "E":
        res["teardown_s"] = t_exit - res["first_result_abs"]
    if left:
        res["leftover_pids_killed"] = left
    return res


def fmt_metrics(res: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v:,.4g}" for k, v in res.items() if isinstance(v, float) and not k.endswith("_abs"))


def medians(samples: Samples) -> dict[str, dict[str, dict[str, float]]]:
    out: dict[str, dict[str, dict[str, float]]] = {}
    for name, per in samples.items():
        for key, runs in per.items():
            good = [r for r in runs if "error" not in r]
            if not good:
                continue
            metrics = {
                k for r in good for k, v in r.items()
                if isinstance(v, (int, float)) and not isinstance(v, bool) and not k.endswith("_abs")
            }
            out.setdefault(name, {})[key] = {
                m: statistics.median(r[m] for r in good if m in r) for m in sorted(metrics)
            }
    return out


def versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    v: dict[str, str | None] = {"python": platform.python_version()}
    for pkg in ("taskflow", "dask", "distributed", "parsl"):
        try:
            v[pkg] = version(pkg)
        except PackageNotFoundError:
            v[pkg] = None
    return v


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", default=None, help=f"workloads to run (default {DEFAULT_WORKLOADS}; G only on request)")
    p.add_argument("--all", action="store_true", help="run A-E and G")
    p.add_argument("--peers", default="dask,parsl,ppe,seq", help="peers besides taskflow")
    p.add_argument("--no-taskflow", action="store_true", help="leave taskflow out (test the peers alone)")
    p.add_argument("--g-peers", default="taskflow", help="runtimes that run G (default taskflow only)")
    p.add_argument("--g-tasks", type=int, default=workloads.G_TASKS, help="tasks in G (default 1,000,000)")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--workers", type=int, default=2, help="worker processes W for A, B, C, E, G")
    p.add_argument("--json", default=str(RESULTS / "latest.json"), help="where to write the JSON figures")
    p.add_argument("--resumable", choices=("on", "off"), default=None,
                   help="taskflow's runs resumable or not (default: the runtime's default)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.resumable is not None:      # the taskflow peer reads it (children inherit it)
        os.environ["TASKFLOW_BENCH_RESUMABLE"] = args.resumable
    keys = list("ABCDEG") if args.all else (args.only or DEFAULT_WORKLOADS).upper().replace(" ", "").split(",")
    bad = [k for k in keys if k not in workloads.WORKLOADS]
    if bad:
        sys.exit(f"unknown workload(s) {bad}; known: {', '.join(workloads.WORKLOADS)} (F and H are not implemented)")
    wanted = ([] if args.no_taskflow else ["taskflow"]) + [
        n for n in args.peers.split(",") if n and n != "taskflow"
    ]
    unknown = [n for n in wanted if n not in ADAPTERS]
    if unknown:
        sys.exit(f"unknown runtime(s) {unknown}; known: {', '.join(ADAPTERS)}")

    mods: dict[str, ModuleType] = {}
    unavailable: dict[str, str] = {}
    for name in wanted:
        try:
            mods[name] = load(name)
        except Exception as exc:
            unavailable[name] = f"{type(exc).__name__}: {exc}"
            log(f"{name}: not available ({unavailable[name]}); skipped")
    names = list(mods)
    g_names = [n for n in args.g_peers.split(",") if n in mods]
    samples: Samples = {n: {k: [] for k in keys} for n in names}
    t_all = time.perf_counter()

    def runs_it(name: str, key: str) -> bool:
        if key in mods[name].SKIP:
            return False
        return name in g_names if key == "G" else True

    # Session workloads, grouped by worker count: one start/stop per runtime per repetition.
    groups: dict[int, list[str]] = {}
    for k in keys:
        wl = workloads.WORKLOADS[k]
        if wl.mode == "session":
            groups.setdefault(wl.workers or args.workers, []).append(k)
    for w, gkeys in groups.items():
        for rep in range(args.repeat):
            log(f"{'+'.join(gkeys)} with {w} workers, repetition {rep + 1}/{args.repeat}")
            for name in rotated(names, rep):
                mine = [k for k in gkeys if runs_it(name, k)]
                if mine:
                    run_session(name, mods[name], mine, w, samples)
    # Fresh-interpreter workloads.
    if any(workloads.WORKLOADS[k].mode == "child" for k in keys):
        compile_sources()
    for key in (k for k in keys if workloads.WORKLOADS[k].mode == "child"):
        wl = workloads.WORKLOADS[key]
        for rep in range(args.repeat if key != "G" else 1):
            log(f"{key} ({wl.title}{f', {args.g_tasks:,} tasks' if key == 'G' else ''}), repetition {rep + 1}")
            for name in rotated(names, rep):
                if runs_it(name, key):
                    res = run_child(key, name, args.workers, str(args.g_tasks), wl.timeout_s)
                    log(f"  {name} {key}: {res.get('error') or fmt_metrics(res)}")
                    samples[name][key].append(res)

    med = medians(samples)
    table = markdown_table(names, keys, med, samples, {n: mods[n].LABEL for n in names}, args.workers)
    print(table)
    meta = {
        "date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
        "versions": versions(),
        "cores": os.cpu_count(),
        "platform": platform.platform(),
        "workers": args.workers,
        "d_slots": workloads.D_SLOTS,
        "repeat": args.repeat,
        "workloads": keys,
        "runtimes": names,
        "unavailable": unavailable,  # e.g. taskflow installed but not importable yet
        "g_tasks": args.g_tasks if "G" in keys else None,
        "resumable": args.resumable,
        "wall_s": time.perf_counter() - t_all,
    }
    out = Path(args.json)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"meta": meta, "samples": samples, "medians": med, "table": table}, indent=2))
    log(f"wrote {out} ({meta['wall_s']:.0f} s in all)")
    left = descendants()
    if left:
        log(f"warning: descendant processes still alive at exit: {sorted(left)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
