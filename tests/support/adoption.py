"""The workflow the adoption tests run, SIGKILL and resume (tests/cluster/test_adopt.py,
test_slurm_adopt.py): each task appends ``start I`` to ``marks`` beside the script when it
starts and ``end I`` when it ends, so the marks prove that no task started twice (with
``SECS=-1`` a task ends only once the test creates ``gate`` beside the script); and what
a resumed master says it adopted, checked against its journal and the marks whatever the
timing (:func:`consistent`: no count of what a time window held)."""
from __future__ import annotations

import textwrap

WF = textwrap.dedent('''
    import os, sys, time
    from taskflow import task, wait_on

    MARKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "marks")
    GATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gate")

    def mark(what):
        with open(MARKS, "a") as f:
            f.write(what + "\\n")

    @task(returns=int)
    def slow(i, secs):
        mark(f"start {i}")
        if secs < 0:                    # gated: it ends once the test opens the gate
            while not os.path.exists(GATE):
                time.sleep(0.05)
        else:
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


def ended(marks):
    return sorted(m for m in marks if m.startswith("end"))


_SAID = {"running": r"(\d+) running task\(s\) adopted", "queued": r"(\d+) queued task\(s\) adopted",
         "collected": r"(\d+) result\(s\) collected that finished while no master was there",
         "restored": r"(\d+) task\(s\) restored", "again": r"(\d+) ran again"}


def said(stderr: str) -> dict[str, int]:
    """The counts the resumed master's line says (``taskflow: resumed run RUN: ...``); 0 for
    a part it does not say."""
    import re
    (line,) = [ln for ln in stderr.splitlines() if ln.startswith("taskflow: resumed run ")]
    out = {}
    for name, pattern in _SAID.items():
        m = re.search(pattern, line)
        out[name] = int(m.group(1)) if m else 0
    return out


def adopted_in_journal(run_dir) -> dict[str, int]:
    """The resumed run's journal: its ADOPTED calls, by what the agent listed of each
    (``running``, ``queued``: it had not started, ``collected``: it had ended while no
    master was there, its result held)."""
    import sqlite3
    try:
        db = sqlite3.connect(f"file:{run_dir / 'journal.db'}?mode=ro", uri=True)
        try:
            rows = [info for (info,) in db.execute(
                "SELECT info FROM transitions WHERE state='ADOPTED'")]
        finally:
            db.close()
    except sqlite3.Error:               # (not made yet: a run just starting)
        rows = []
    out = {"running": 0, "queued": 0, "collected": 0}
    for info in rows:
        kind = "collected" if "while no master was there" in info else \
            "queued" if "had not started" in info else "running"
        out[kind] += 1
    return out


def consistent(stderr: str, run_dir, marks_before: list[str], marks_after: list[str],
               tasks: int) -> dict[str, int]:
    """What a resumed master said of what it adopted agrees with its journal and with what
    the tasks did, whatever the timing: every task ended once; the adopted ones (running,
    queued, collected) and those restored or run again are all the tasks; a task that had
    ended before the resume began (``marks_before``) is collected (or restored: its result
    reached the master before the kill). Returns the counts said."""
    n = said(stderr)
    assert ended(marks_after) == sorted(f"end {i}" for i in range(tasks)), marks_after
    assert n["running"] + n["queued"] + n["collected"] + n["restored"] + n["again"] == tasks, n
    assert adopted_in_journal(run_dir) == {k: n[k] for k in ("running", "queued",
                                                             "collected")}, stderr
    assert len(ended(marks_before)) <= n["collected"] + n["restored"], (n, marks_before)
    return n
