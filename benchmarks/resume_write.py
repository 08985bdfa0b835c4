"""The resume log's writer alone: the master's cost per kept value (checksums included).

Writes records as the loop thread does for calls with a key
(``completion_record``: each value described, its CRC-32 taken, one frame per
batch of ``--batch`` records) into a fresh ``resume.log`` on the run's disk, for
values of 15 bytes (a small int's pickle), 10 KB and 1 MB; prints the time per
record (the best run: on a loaded machine the median moves with the load) and
the throughput. The same records each round: what is measured is
the writer (describe, pickle the header, checksums, ``write``), not the tasks.

    python benchmarks/resume_write.py [--dir /tmp] [--repeat 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

from taskflow.graph.keys import KeyParts
from taskflow.runtime.recovery import log as L


def one(where: str, size: int, records: int, batch: int) -> float:
    """Seconds per record to keep ``records`` values of ``size`` bytes."""
    value = os.urandom(size)
    parts = KeyParts(b"c" * 16, ())
    path = os.path.join(where, "resume.log")
    if os.path.exists(path):
        os.unlink(path)
    w = L.ResumeLog(path)
    t0 = time.perf_counter()
    for start in range(0, records, batch):
        recs, payloads = [], []         # type: ignore[var-annotated]
        for i in range(start, min(records, start + batch)):
            desc = L._describe(value, payloads)
            recs.append(("k", i, i.to_bytes(16, "big"), "f", i, parts, (desc,), (i,)))
        w.add(recs, payloads)
    dt = time.perf_counter() - t0
    w.close()
    return dt / records


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dir", default=None, help="where the log is written (default: a temp dir)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    cases = [(15, 200_000, 200), (10_000, 20_000, 50), (1_000_000, 500, 1)]
    with tempfile.TemporaryDirectory(dir=args.dir) as where:
        print(f"| value | records | us/record, best of {args.repeat} | median | MB/s (best) |")
        print("|---|---|---|---|---|")
        for size, n, batch in cases:
            runs = [one(where, size, n, batch) for _ in range(args.repeat)]
            best, mid = min(runs), statistics.median(runs)
            print(f"| {size:,} B | {n:,} | {best * 1e6:.2f} | {mid * 1e6:.2f} | "
                  f"{size / best / 1e6:,.0f} |")


if __name__ == "__main__":
    main()
