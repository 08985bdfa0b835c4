"""Do the local alias blocks on the hot path pay? Measured on the executor's task loop.

    python benchmarks/hot_aliases.py [--tasks 20000] [--repeat 7]

The executor's loop (``taskflow.agent.executor.loop._run_tasks``) starts with a
block of local aliases (``dumps = pickle.dumps``, ``ok = M.OK``, ...). This
runs the real function on a frame of no-op tasks, in this process (no pipe
is written: every task is short), against a copy of it whose aliases are
replaced by the lookups they stand for, interleaved, and prints the median
µs per task of each and their ratio.
"""
from __future__ import annotations

import argparse
import inspect
import os
import re
import statistics
import sys
import textwrap
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "src"))

from taskflow.agent.executor import loop as X  # noqa: E402

# alias name -> what it stands for, in the copy without aliases
ALIASES = {"produced": "PRODUCED", "small": "PRODUCED.small", "dumps": "pickle.dumps",
           "proto": "P.PROTOCOL", "now": "time.time", "ok": "M.OK"}


def without_aliases() -> object:
    src = textwrap.dedent(inspect.getsource(X._run_tasks))
    lines = [ln for ln in src.split("\n")
             if not re.match(r"\s+(%s) = " % "|".join(ALIASES), ln)]
    body = "\n".join(lines).replace("def _run_tasks(", "def _run_tasks_plain(")
    for name, expr in ALIASES.items():
        body = re.sub(r"(?<![\w.])%s(?![\w(=])" % name, expr, body)
        body = re.sub(r"(?<![\w.])%s\(" % name, expr + "(", body)
    ns = dict(vars(X))
    exec(compile(body, "<no aliases>", "exec"), ns)
    return ns["_run_tasks_plain"]


def run(fn: object, n: int) -> float:
    digest = b"d" * 16
    funcs = {digest: lambda i: i}
    tasks = [(i, digest, (i,), None, None, 1, None, None, 0, 1, False, [i]) for i in range(n)]
    cur = X.Current()
    out, err = X.Capture("STDOUT", cur), X.Capture("STDERR", cur)
    means = {digest: 1e-6}
    # results the loop sends while it runs (a task seen as not short after ``HOLD`` s of a
    # long frame: a loaded machine) go to /dev/null, through the executor's nesting state
    wfd = os.open(os.devnull, os.O_WRONLY)
    X.NEST.wfd = wfd
    try:
        t0 = time.perf_counter()
        fn({}, funcs, means, cur, out, err, wfd, [], [], iter(tasks))   # type: ignore[operator]
        return (time.perf_counter() - t0) / n * 1e6
    finally:
        X.NEST.wfd = -1
        os.close(wfd)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    plain = without_aliases()
    with_a, without = [], []
    for _ in range(a.repeat):
        with_a.append(run(X._run_tasks, a.tasks))
        without.append(run(plain, a.tasks))
    m1, m2 = statistics.median(with_a), statistics.median(without)
    print(f"executor loop, {a.tasks} no-op tasks, median of {a.repeat}: with aliases "
          f"{m1:.3f} us/task, without {m2:.3f} us/task, ratio {m1 / m2:.3f}")


if __name__ == "__main__":
    main()
