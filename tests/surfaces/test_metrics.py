"""/metrics for Prometheus: `taskflow run --metrics-port` during a real run, the monitor's
after one, `taskflow serve`'s for its running runs; each parsed by prometheus_client's own
text parser, each refusing a request without the token (401) or with a wrong one (403)."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

httpx = pytest.importorskip("httpx", reason="pip install -e '.[test]' (httpx)")
pytest.importorskip("prometheus_client", reason="pip install -e '.[test]' (prometheus_client)")
from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

import taskflow  # noqa: E402

from support import observe_tasks as ot  # noqa: E402
from support import serve  # noqa: E402
from support.serve import GATED  # noqa: E402

service = serve.service
DEADLINE = 90.0     # s: events on a loaded 2-core machine

GATED_RUN = '''
import os, sys, time
from taskflow import task, wait_on

@task(returns=int)
def hold(path):
    while not os.path.exists(path):
        time.sleep(0.02)
    return 1

@task(returns=int)
def quick(i):
    return i

print(sum(wait_on([quick(i) for i in range(5)])), wait_on(hold(sys.argv[1])))
'''


def parse(text):
    """{family name: [(sample name, labels, value)]} by prometheus_client's parser."""
    out = {}
    for fam in text_string_to_metric_families(text):
        out.setdefault(fam.name, []).extend((s.name, s.labels, s.value) for s in fam.samples)
    return out


def value(fams, family, sample=None, **labels):
    hits = [v for n, lb, v in fams.get(family, []) if (sample is None or n == sample)
            and all(lb.get(k) == w for k, w in labels.items())]
    return sum(hits) if hits else None


def until(what, check):
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.05)
    raise AssertionError(f"no {what} within {DEADLINE} s")


def test_run_metrics_port_during_and_token(tmp_path):
    script = tmp_path / "wf.py"
    script.write_text(GATED_RUN)
    gate = tmp_path / "go"
    env = {**os.environ, "TASKFLOW_RUN_DIR": str(tmp_path / "runs")}
    proc = subprocess.Popen([sys.executable, "-m", "taskflow", "run", "--no-progress", "-w", "2",
                             "--metrics-port", "0", str(script), str(gate)], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stderr), daemon=True)
    reader.start()
    try:
        url = until("metrics URL", lambda: next((ln.split()[-1] for ln in list(lines)
                                                 if ln.startswith("taskflow metrics: ")), None))
        base = url.split("?")[0]

        def held():
            r = httpx.get(url, timeout=30)
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
            fams = parse(r.text)
            return fams if value(fams, "taskflow_tasks", name="hold", state="RUNNING") else None
        fams = until("running task in /metrics", held)
        assert value(fams, "taskflow_tasks", name="quick", state="DONE") == 5
        assert value(fams, "taskflow_task_duration_seconds", "taskflow_task_duration_seconds_count",
                     name="quick") == 5
        (run,) = {lb["run"] for _, lb, _ in fams["taskflow_run_info"]}
        assert value(fams, "taskflow_run_info", state="running") == 1
        assert value(fams, "taskflow_node_slots_used", node="local") == 1
        assert value(fams, "taskflow_node_slots_free", node="local") == 1
        assert value(fams, "taskflow_nodes", state="up") == 1
        assert value(fams, "taskflow_master_resident_bytes") > 10 * 2**20
        assert value(fams, "taskflow_master_cpu_seconds") > 0
        assert value(fams, "taskflow_journal_backlog_rows") is not None
        assert run and value(fams, "taskflow_task_read_bytes") is not None
        assert httpx.get(base, timeout=30).status_code == 401
        assert httpx.get(base, params={"token": "nope"}, timeout=30).status_code == 403
        ok = httpx.get(base, headers={"Authorization": f"Bearer {url.split('token=')[1]}"},
                       timeout=30)
        assert ok.status_code == 200 and "taskflow_tasks" in ok.text
        gate.touch()
        assert proc.wait(DEADLINE) == 0, "".join(lines)
    finally:
        gate.touch()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_monitor_metrics_after_a_run(tmp_path):
    from taskflow.monitor import Monitor
    with taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), echo_logs=False) as rt:
        taskflow.wait_on([ot.nap(0.01) for _ in range(4)])
        with pytest.raises(taskflow.TaskError):
            taskflow.wait_on(ot.boom(0))
    mon = Monitor(str(tmp_path / "runs"), rt.run_id).start()
    try:
        base = f"http://127.0.0.1:{mon.port}/metrics"
        assert httpx.get(base, timeout=30).status_code == 401
        assert httpx.get(base, params={"token": "x"}, timeout=30).status_code == 403
        r = httpx.get(base, params={"token": mon.token}, timeout=30)
        assert r.status_code == 200, r.text
        fams = parse(r.text)
        assert value(fams, "taskflow_tasks", name="nap", state="DONE") == 4
        assert value(fams, "taskflow_tasks", name="boom", state="FAILED") == 1
        assert value(fams, "taskflow_run_info", run=rt.run_id, state="finished") == 1
        assert value(fams, "taskflow_task_duration_seconds", "taskflow_task_duration_seconds_count",
                     name="nap") == 4
        assert value(fams, "taskflow_task_duration_seconds", "taskflow_task_duration_seconds_sum",
                     name="nap") >= 0.04
        assert value(fams, "taskflow_master_resident_bytes") is None     # (it ended)
        again = parse(httpx.get(base, params={"token": mon.token}, timeout=30).text)
        assert value(again, "taskflow_task_duration_seconds", "taskflow_task_duration_seconds_count",
                     name="nap") == 4       # each ended task counted once
    finally:
        mon.stop()


def test_serve_metrics_of_running_runs(service, tmp_path):
    svc = service()
    gate = tmp_path / "open"
    run = svc.submit(GATED, str(gate), "m")
    root = svc.url.split("/api/")[0]
    try:
        assert httpx.get(f"{root}/metrics", timeout=30).status_code == 401

        def seen():
            r = httpx.get(f"{root}/metrics", headers={"Authorization": f"Bearer {svc.token}"},
                          timeout=30)
            assert r.status_code == 200, r.text
            fams = parse(r.text)
            return fams if value(fams, "taskflow_tasks", run=run["id"], state="RUNNING") else None
        fams = until("the service's running run in /metrics", seen)
        assert value(fams, "taskflow_service_runs", state="running") == 1
        assert value(fams, "taskflow_tasks", run=run["id"], name="gate") == 1
    finally:
        gate.touch()
    assert svc.wait_state(run["id"], "finished")["state"] == "finished"


def test_grafana_dashboard_names_only_metrics_that_exist():
    import json
    import re
    from taskflow.metrics.exposition import HELP
    path = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "grafana",
                        "taskflow-dashboard.json")
    with open(path) as f:
        dash = json.load(f)
    named = {m for p in dash["panels"] for t in p["targets"]
             for m in re.findall(r"\btaskflow_\w+", t["expr"])}
    known = set(HELP) | {"taskflow_service_runs"}
    for m in named:
        base = re.sub(r"_(bucket|count|sum)$", "", m)
        base = re.sub(r"_total$", "", base)
        assert base in known, f"{m} is not a metric /metrics serves"
    assert {"taskflow_tasks", "taskflow_task_duration_seconds_bucket",
            "taskflow_node_slots_used"} <= named
