"""`taskflow crate` and `taskflow run --crate`: a Workflow Run Crate of a real run, checked by
the community validator (roc-validator) with the Provenance Run Crate profile, which runs
the Workflow Run Crate profile's checks too (its inheritance is asserted). The validator's
network is the test's: tests/support/crate_check.py answers the RO-Crate context's URL with
the copy the rocrate package ships and refuses every other URL."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile

import pytest

pytest.importorskip("rocrate", reason="pip install -e '.[test]' (rocrate)")
pytest.importorskip("rocrate_validator", reason="pip install -e '.[test]' (roc-validator)")

from support import crate_check  # noqa: E402

APP = os.path.join(os.path.dirname(__file__), "crate_app", "workflow.py")


def taskflow(*args, cwd, env=None):
    return subprocess.run([sys.executable, "-m", "taskflow", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def graph_of(path):
    if path.endswith(".zip"):
        with zipfile.ZipFile(path) as z:
            doc = json.loads(z.read("ro-crate-metadata.json"))
    else:
        with open(os.path.join(path, "ro-crate-metadata.json")) as f:
            doc = json.load(f)
    return {e["@id"]: e for e in doc["@graph"]}


@pytest.fixture(scope="module")
def crated(tmp_path_factory):
    """A real run (a FILE_IN/FILE_OUT task, a @binary task, plain tasks) with --crate."""
    here = tmp_path_factory.mktemp("crate")
    (here / "in.txt").write_text("hello\n")
    env = {**os.environ, "TASKFLOW_RUN_DIR": str(here / "runs")}
    out = taskflow("run", "--no-progress", "--crate", APP, "in.txt", "out.txt", cwd=here, env=env)
    assert out.returncode == 0, out.stderr
    (run_id,) = os.listdir(here / "runs")
    run_dir = here / "runs" / run_id
    assert f"taskflow: crate: {run_dir / 'crate'}" in out.stderr
    return here, env, run_dir


def test_run_crate_validates_and_says_what_ran(crated):
    here, _, run_dir = crated
    crate = str(run_dir / "crate")
    assert "workflow-run-crate-0.5" in crate_check.inherited("provenance-run-crate")
    issues, asked = crate_check.required_issues(crate, "provenance-run-crate")
    assert issues == []
    assert "https://w3id.org/ro/crate/1.1/context" in asked       # (served, not skipped)
    g = graph_of(crate)
    wf = g["workflow.py"]
    assert set(wf["@type"]) >= {"File", "SoftwareSourceCode", "ComputationalWorkflow"}
    assert wf["sha256"] == hashlib.sha256(open(APP, "rb").read()).hexdigest()
    assert {s["@id"] for s in wf["step"]} == {"#step-upper", "#step-count", "#step-square"}
    run = g["#run"]
    assert run["actionStatus"] == "CompletedActionStatus" and run["startTime"] < run["endTime"]
    assert "in.txt out.txt" in run["description"] and g["#run-argv"]["value"] == "in.txt out.txt"
    src, dst = f"file://{here}/in.txt", f"file://{here}/out.txt"
    assert {o["@id"] for o in run["object"]} >= {src} and {r["@id"] for r in run["result"]} == {dst}
    assert g[dst]["sha256"] == hashlib.sha256((here / "out.txt").read_bytes()).hexdigest()
    assert g[dst]["contentSize"] == str((here / "out.txt").stat().st_size)
    # the task that read in.txt and wrote out.txt, with its label cut as the journal keeps it
    upper = g["#task-1"]
    assert [o["@id"] for o in upper["result"]] == [dst]
    assert src in {o["@id"] for o in upper["object"]}
    label = g["#task-1-p-label"]
    assert label["value"].startswith("'big big") and "cut at 60" in label["description"]
    assert upper["location"] == {"@id": "#node-local"} and "slots" in g["#node-local"]["description"]
    # the @binary task: the program resolved here, its version asked
    wc = g["#tool-count"]
    assert wc["identifier"] == f"file://{os.path.realpath(shutil.which('wc'))}"
    assert "wc" in wc.get("softwareVersion", "wc")     # (coreutils' wc answers --version)
    assert g["#task-2-exit_code"]["value"] == 0
    assert g["#control-2"]["instrument"] == {"@id": "#step-count"}
    assert g["./"]["license"] == {"@id": "#license-not-given"}
    assert g["#taskflow"]["version"] and g["#python"]["version"] == ".".join(
        map(str, sys.version_info[:3]))


def test_existing_output_refused_unless_force(crated):
    here, env, run_dir = crated
    taken = here / "taken.zip"
    taken.write_text("not a crate")
    out = taskflow("crate", run_dir.name, "-o", str(taken), cwd=here, env=env)
    assert out.returncode == 1 and "exists" in out.stderr and "--force" in out.stderr
    assert "Traceback" not in out.stderr and taken.read_text() == "not a crate"
    out = taskflow("crate", run_dir.name, "-o", str(taken), "--force", "--include-data",
                   "--license", "CC-BY-4.0", "--max-tasks", "2", cwd=here, env=env)
    assert out.returncode == 0, out.stderr
    with zipfile.ZipFile(taken) as z:
        names = set(z.namelist())
    assert "ro-crate-metadata.json" in names and any(n.endswith("-out.txt") for n in names)
    g = graph_of(str(taken))
    assert g["./"]["license"] == "CC-BY-4.0"
    assert "#task-2" in g and "#task-3" not in g and "first 2 of its 5 tasks" in g["#run"]["description"]


def test_deleted_file_named_with_its_digest(crated, tmp_path):
    """A file the run wrote, deleted since: named, not available, with the digest the run's
    crate had taken (kept in the run's digests.json)."""
    here, env, run_dir = crated
    kept = hashlib.sha256((here / "out.txt").read_bytes()).hexdigest()
    (here / "out.txt").rename(tmp_path / "away.txt")
    try:
        out = taskflow("crate", run_dir.name, "-o", str(tmp_path / "c"), cwd=here, env=env)
        assert out.returncode == 0, out.stderr
        f = graph_of(str(tmp_path / "c"))[f"file://{here}/out.txt"]
        assert f["sha256"] == kept and "not available" in f["description"]
        assert "dateModified" not in f
    finally:
        (tmp_path / "away.txt").rename(here / "out.txt")


def test_damaged_or_missing_run_is_one_line(tmp_path):
    bad = tmp_path / "runs" / "20260101-000000-abcdef"
    bad.mkdir(parents=True)
    (bad / "journal.db").write_bytes(b"this is not a database" * 100)
    env = {**os.environ, "TASKFLOW_RUN_DIR": str(tmp_path / "runs")}
    out = taskflow("crate", "-o", str(tmp_path / "c"), cwd=tmp_path, env=env)
    assert out.returncode == 1 and "damaged" in out.stderr and "Traceback" not in out.stderr
    out = taskflow("crate", "nosuchrun", cwd=tmp_path, env=env)
    assert out.returncode == 1 and "no run" in out.stderr and "Traceback" not in out.stderr


PYCOMPSS_APP = """
from pycompss.api.task import task
from pycompss.api.api import compss_wait_on

@task(returns=1)
def inc(x):
    return x + 1

if __name__ == "__main__":
    print(compss_wait_on(inc(1)))
"""


def test_runcompss_provenance_writes_a_crate_where_pycompss_does(tmp_path):
    from taskflow.cli.runcompss import translate
    _, opts = translate(["-gp", "app.py"], set())
    assert opts["provenance"] is True and opts["graph"] is True
    _, opts = translate(["--provenance=ro-crate-info.yaml", "app.py"], set())
    assert opts["provenance"] == "ro-crate-info.yaml"
    (tmp_path / "app.py").write_text(PYCOMPSS_APP)
    env = {**os.environ, "TASKFLOW_RUN_DIR": str(tmp_path / "runs")}
    out = taskflow("run", "--compat", "pycompss", "-p", "app.py", cwd=tmp_path, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    (crate,) = [p for p in os.listdir(tmp_path) if p.startswith("COMPSs_RO-Crate_")]
    g = graph_of(str(tmp_path / crate))
    assert g["./"]["mainEntity"] == {"@id": "app.py"} and "#step-inc" in g
