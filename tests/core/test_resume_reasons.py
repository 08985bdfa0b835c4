"""Why a resumed run's calls ran again: exactly the edited step and its consumers, each
with a one-line reason, said by default (a line per task name) and per call (explain).

Every step appends ``<step> <sample>`` to ``runs.log`` when it runs, so what ran is
counted, not guessed.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

STEPS = textwrap.dedent('''
    from taskflow import task, FILE_IN

    def mark(what):
        with open("runs.log", "a") as f:
            f.write(what + "\\n")

    @task(returns=str, src=FILE_IN)
    def fetch(src):
        mark(f"fetch {src}")
        return open(src).read().strip()

    @task(returns=str)
    def trim(s):
        mark(f"trim {s}")
        return s.strip("- ")

    @task(returns=str)
    def align(s):
        mark(f"align {s}")
        return s.upper()

    @task(returns=int)
    def score(s):
        mark(f"score {s}")
        return len(s)

    @task(returns=int)
    def report(scores):
        mark("report")
        return sum(scores)
''')

WF = textwrap.dedent('''
    from taskflow import wait_on
    import steps
    scores = [steps.score(steps.align(steps.trim(steps.fetch(f"s{i}.txt")))) for i in range(3)]
    print("RESULT", wait_on(steps.report(scores)))
''')


def _run(tmp_path, *args):
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"))
    return subprocess.run([sys.executable, "-m", "taskflow", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def _ran(tmp_path) -> list[str]:
    """The steps that ran since the last look, sorted (one per call)."""
    log = tmp_path / "runs.log"
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return sorted(ln.split()[0] for ln in lines)


def test_editing_one_step_reruns_it_and_its_consumers_with_a_reason_each(tmp_path):
    (tmp_path / "steps.py").write_text(STEPS)
    (tmp_path / "wf.py").write_text(WF)
    for i in range(3):
        (tmp_path / f"s{i}.txt").write_text(f"-sample{i}-\n")
    r = _run(tmp_path, "run", "--no-progress", "wf.py")
    assert r.returncode == 0 and "RESULT 21" in r.stdout, r.stderr
    _ran(tmp_path)
    # edit one of the five steps: align
    (tmp_path / "steps.py").write_text(STEPS.replace("return s.upper()",
                                                     "return s.upper() + '!'"))
    r = _run(tmp_path, "run", "--no-progress", "--resume", "wf.py")
    assert r.returncode == 0 and "RESULT 24" in r.stdout, r.stderr
    assert _ran(tmp_path) == ["align"] * 3 + ["report"] + ["score"] * 3     # nothing else
    # the line per task name comes by default
    for line in ("reused 3 of 3 calls of fetch; none ran again",
                 "reused 3 of 3 calls of trim; none ran again",
                 "reused 0 of 3 calls of align; 3 ran: 3 its code changed\n",
                 "reused 0 of 3 calls of score; 3 ran: 3 an upstream task changed (parameter "
                 "s); 0 ran because its code changed",
                 "reused 0 of 1 calls of report; 1 ran:"):
        assert line in r.stderr, r.stderr
    # each call that ran again, one line with its reason (taskflow explain)
    ex = _run(tmp_path, "explain")
    assert ex.returncode == 0, ex.stderr
    calls = re.findall(r"^  task \d+ (\w+)\(.*\): (.+)$", ex.stdout, re.M)
    assert sorted(name for name, _ in calls) == ["align"] * 3 + ["report"] + ["score"] * 3
    assert {why for name, why in calls if name == "align"} == {"its code changed"}
    assert {why for name, why in calls if name == "score"} == \
        {"an upstream task changed (parameter s)"}
    # and an input file edited since: its reader names it; the rest of its chain follows
    (tmp_path / "s1.txt").write_text("-other-\n")
    r = _run(tmp_path, "run", "--no-progress", "--resume", "--explain", "wf.py")
    assert r.returncode == 0, r.stderr
    assert "calls that ran again:" in r.stderr           # --explain: each call too
    assert _ran(tmp_path) == ["align", "fetch", "report", "score", "trim"]
    src = tmp_path / "s1.txt"
    assert (f"reused 2 of 3 calls of fetch; 1 ran: 1 input file changed (content, parameter "
            f"src): {src}; 0 ran because its code changed") in r.stderr, r.stderr
    report = _run(tmp_path, "report")
    assert "## Resumed: calls reused and why the others ran again" in report.stdout
    assert "- reused 2 of 3 calls of fetch; 1 ran: 1 input file changed" in report.stdout
