"""The workflow the adoption tests run, SIGKILL and resume (tests/cluster/test_adopt.py,
test_slurm_adopt.py): each task appends ``start I`` to ``marks`` beside the script when it
starts and ``end I`` when it ends, so the marks prove that no task started twice."""
from __future__ import annotations

import textwrap

WF = textwrap.dedent('''
    import os, sys, time
    from taskflow import task, wait_on

    MARKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "marks")

    def mark(what):
        with open(MARKS, "a") as f:
            f.write(what + "\\n")

    @task(returns=int)
    def slow(i, secs):
        mark(f"start {i}")
        time.sleep(secs)
        mark(f"end {i}")
        return i * 10

    futs = [slow(i, float(os.environ.get("SECS", "3"))) for i in range(4)]
    print("SUM", sum(wait_on(futs)), flush=True)
''')


def marks(tmp_path):
    p = tmp_path / "marks"
    return p.read_text().split("\n")[:-1] if p.exists() else []


def started(marks):
    return sorted(m for m in marks if m.startswith("start"))
