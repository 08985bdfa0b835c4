"""Streams between running tasks (issue 36): one producer, two consumers, two local nodes.

    python benchmarks/stream_bench.py [--items 10000] [--repeat 3] [--json out.json]

S   one producer task publishes ``--items`` small objects (a dict of an int and a short
    string) to a ``taskflow.Stream``; two consumer tasks poll it; a 2-node local cluster
    (2 slots each). Measured: items/s from the producer's first publish to the last item
    consumed; how many items the producer had published when the first item was consumed
    (target: fewer than 100); every item delivered exactly once.
Q   the floor: the same items through a ``multiprocessing.Queue`` from one process to
    another (put all, get all): items/s.

Figures are medians of --repeat after a warm-up; only same-run ratios mean much.
"""
from __future__ import annotations

import argparse
import bisect
import json
import multiprocessing as mp
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import taskflow  # noqa: E402
from taskflow import STREAM_IN, STREAM_OUT, task, wait_on  # noqa: E402


def _item(i: int) -> dict[str, Any]:
    return {"i": i, "name": f"item-{i}"}


@task(s=STREAM_OUT, returns=1)
def producer(s, n):
    stamps = []
    for i in range(n):
        s.publish(_item(i))
        stamps.append(time.time())
    s.close()
    return stamps


@task(s=STREAM_IN, returns=1)
def consumer(s):
    first = None
    ids = []
    while not s.is_closed():
        items = s.poll(timeout=10)
        if items and first is None:
            first = time.time()
        ids.extend(x["i"] for x in items)
    ids.extend(x["i"] for x in s.poll())
    return first, time.time(), ids


def stream_run(n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        with taskflow.Runtime(workers=4, nodes=2, run_dir=d, journal=False):
            s = taskflow.Stream()
            a, b = consumer(s), consumer(s)
            p = producer(s, n)
            stamps, (fa, ea, ia), (fb, eb, ib) = wait_on(p, a, b)
    firsts = [f for f in (fa, fb) if f is not None]
    first = min(firsts)
    ids = sorted(ia + ib)
    return {
        "items_per_s": n / (max(ea, eb) - stamps[0]),
        "published_at_first_consumed": bisect.bisect_right(stamps, first),
        "exactly_once": ids == list(range(n)),
        "per_consumer": [len(ia), len(ib)],
    }


def _get_all(q: Any, n: int, done: Any) -> None:
    for _ in range(n):
        q.get()
    done.put(time.time())


def queue_run(n: int) -> float:
    ctx = mp.get_context("fork")
    q, done = ctx.Queue(), ctx.Queue()
    reader = ctx.Process(target=_get_all, args=(q, n, done))
    reader.start()
    t0 = time.time()
    for i in range(n):
        q.put(_item(i))
    t_end = done.get()
    reader.join()
    return n / (t_end - t0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--items", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default=None)
    args = ap.parse_args()
    stream_run(500)                         # warm-up
    queue_run(500)
    runs, floors = [], []
    for _ in range(args.repeat):
        runs.append(stream_run(args.items))
        floors.append(queue_run(args.items))
    rate = statistics.median(r["items_per_s"] for r in runs)
    floor = statistics.median(floors)
    out = {
        "items": args.items, "repeat": args.repeat,
        "stream_items_per_s": rate, "queue_items_per_s": floor, "ratio": rate / floor,
        "published_at_first_consumed": [r["published_at_first_consumed"] for r in runs],
        "exactly_once": all(r["exactly_once"] for r in runs),
        "per_consumer": [r["per_consumer"] for r in runs],
    }
    print("| workload | items/s | published when the first was consumed | exactly once |")
    print("|---|---|---|---|")
    print(f"| S: Stream, 1 producer -> 2 consumers, 2 local nodes | {rate:,.0f} | "
          f"{out['published_at_first_consumed']} | {out['exactly_once']} |")
    print(f"| Q: multiprocessing.Queue, 2 processes (floor) | {floor:,.0f} | - | - |")
    print(f"\nS / Q = {rate / floor:.2f}; items per consumer: {out['per_consumer']}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
