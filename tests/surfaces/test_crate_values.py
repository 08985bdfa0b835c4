"""Large parameter values by digest: the journal keeps a value whose pickle is over
taskflow.graph.recorded.BY_DIGEST bytes as its sha256, size, type and length (a VALUES
row), its text reads ``<list of 200,000 items, 869.2 kB, sha256:…>``, and the run's crate
names it by that digest and still validates (roc-validator, offline: tests/support/
crate_check.py). The sha256 is checked against one computed here, of the same canonical
form: ``pickle.dumps(value, pickle.HIGHEST_PROTOCOL)``."""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import sqlite3
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("rocrate", reason="pip install -e '.[test]' (rocrate)")
pytest.importorskip("rocrate_validator", reason="pip install -e '.[test]' (roc-validator)")

from support import crate_check  # noqa: E402

from taskflow.graph.recorded import BY_DIGEST  # noqa: E402
from taskflow.journal.text import size_text  # noqa: E402

N = 200_000         # items of the large list: a pickle of about 1 MB
STEPS = textwrap.dedent('''
    from taskflow import task

    @task(returns=1)
    def total(xs, label):
        return sum(xs)

    @task(returns=1)
    def length(s):
        return len(s)

    @task(returns=1)
    def make(n):
        return list(range(n))

    @task(returns=1)
    def both(xs, made):
        return len(xs) + len(made)
''')
WF = textwrap.dedent(f'''
    from taskflow import wait_on
    import steps
    xs = list(range({N}))
    print("RESULT", wait_on(steps.total(xs, "small")), wait_on(steps.length("y" * 3000)),
          wait_on(steps.both(xs, steps.make({N}))))
''')


def _taskflow(tmp_path, *args):
    env = dict(os.environ, TASKFLOW_RUN_DIR=str(tmp_path / "runs"))
    return subprocess.run([sys.executable, "-m", "taskflow", *args], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)


def _sha(value):
    return hashlib.sha256(pickle.dumps(value, pickle.HIGHEST_PROTOCOL)).hexdigest()


@pytest.fixture(scope="module")
def ran(tmp_path_factory):
    here = tmp_path_factory.mktemp("values")
    (here / "steps.py").write_text(STEPS)
    (here / "wf.py").write_text(WF)
    r = _taskflow(here, "run", "--no-progress", "--crate", "wf.py")
    assert r.returncode == 0 and f"RESULT {sum(range(N))} 3000 {2 * N}" in r.stdout, r.stderr
    (run_id,) = os.listdir(here / "runs")
    return here, run_id


def _kept(run_dir):
    db = sqlite3.connect(os.path.join(run_dir, "journal.db"))
    try:
        params = dict(db.execute("SELECT name, params FROM tasks"))
        values = {name: json.loads(info) for name, info in db.execute(
            "SELECT t.name, x.info FROM transitions x JOIN tasks t ON t.id = x.task_id "
            "WHERE x.state = 'VALUES'")}
    finally:
        db.close()
    return params, values


def test_journal_keeps_large_values_by_digest(ran):
    here, run_id = ran
    params, values = _kept(here / "runs" / run_id)
    big, text = list(range(N)), "y" * 3000
    big_sha, text_sha = _sha(big), _sha(text)
    big_size = len(pickle.dumps(big, pickle.HIGHEST_PROTOCOL))
    assert big_size > BY_DIGEST
    # a mutable argument (its snapshot) and a string passed as it is, each by digest
    assert values["total"] == [["xs", "list", N, big_size, big_sha]]
    assert values["length"] == [["s", "str", 3000, len(pickle.dumps(text, 5)), text_sha]]
    assert params["total"] == (f"xs=<list of {N:,} items, {size_text(big_size)}, "
                               f"sha256:{big_sha[:12]}…>, label='small'")
    assert params["length"] == f"s=<str of 3,000 characters, 3.0 kB, sha256:{text_sha[:12]}…>"
    # a call that also reads a large result left on its node (its row lets go of that
    # future early): its own large argument is still kept by digest; the result is named
    # by the task that made it
    assert values["both"] == [["xs", "list", N, big_size, big_sha]]
    assert params["both"].startswith(f"xs=<list of {N:,} items") and "made=<data d" in params["both"]
    assert params["make"] == f"n={N}" and "make" not in values      # small: inline


def test_crate_names_large_values_by_digest_and_validates(ran):
    here, run_id = ran
    crate = str(here / "runs" / run_id / "crate")
    issues, _ = crate_check.required_issues(crate, "provenance-run-crate")
    assert issues == []
    meta = os.path.join(crate, "ro-crate-metadata.json")
    assert os.path.getsize(meta) < 100_000          # the values are not in it
    with open(meta) as f:
        g = {e["@id"]: e for e in json.load(f)["@graph"]}
    by_task = {e["name"]: e for e in g.values() if e.get("@type") == "CreateAction"}
    pv = g[next(o["@id"] for o in by_task["total #1"]["object"] if o["@id"].endswith("-p-xs"))]
    big_sha = _sha(list(range(N)))
    assert pv["sha256"] == big_sha and pv["identifier"] == f"sha256:{big_sha}"
    assert pv["contentSize"] == str(len(pickle.dumps(list(range(N)), pickle.HIGHEST_PROTOCOL)))
    assert pv["value"].startswith(f"<list of {N:,} items") and f"length {N}" in pv["description"]
    small = g[pv["@id"].replace("-p-xs", "-p-label")]
    assert small["value"] == "'small'" and "sha256" not in small


def test_report_and_explain_show_the_digest(ran):
    here, run_id = ran
    big_sha = _sha(list(range(N)))
    r = _taskflow(here, "report", run_id)
    assert r.returncode == 0, r.stderr
    assert f"xs=<list of {N:,} items" in r.stdout and f"sha256:{big_sha[:12]}…" in r.stdout
    # a resumed run after an edit of total: its call ran again, explain shows its value
    (here / "steps.py").write_text(STEPS.replace("return sum(xs)", "return sum(xs) + 0"))
    r = _taskflow(here, "run", "--no-progress", "--resume", run_id, "wf.py")
    assert r.returncode == 0, r.stderr
    r = _taskflow(here, "explain")
    assert r.returncode == 0, r.stderr
    line = next(ln for ln in r.stdout.splitlines() if " total(" in ln)
    assert f"xs=<list of {N:,} items" in line and f"sha256:{big_sha[:12]}…" in line
