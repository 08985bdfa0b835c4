"""`taskflow serve`: a real service process and a real HTTP client (httpx).

Every test starts `python -m taskflow serve --port 0` in its own workdir and
talks to it over HTTP: submit, follow events until the end, read and follow
logs, cancel, queue order, SIGKILL and restart, tokens, bad input.
"""
from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time

import pytest

httpx = pytest.importorskip("httpx", reason="pip install -e '.[test]' (httpx)")
pytest.importorskip("fastapi", reason="pip install -e '.[serve]'")

from support import serve  # noqa: E402
from support.serve import GATED, SQUARES  # noqa: E402

service = serve.service        # the fixture: services started and stopped by it

SLOW_LINES = '''
import time
from taskflow import task, wait_on

@task(returns=int)
def talk():
    for i in range(3):
        print("line", i, flush=True)
        time.sleep(0.7)
    return 3

wait_on(talk())
'''


def test_submit_follow_events_read_logs(service, tmp_path):
    svc = service()
    run = svc.submit(SQUARES, 4, workers=2)
    assert run["state"] in ("queued", "running") and len(run["id"]) == 12
    evs = svc.events(run["id"])
    names = [e for e, _ in evs]
    assert names[0] == "run" and names[-1] == "end"
    runs = [d["state"] for e, d in evs if e == "run"]
    assert runs[-1] == "finished" and "running" in runs
    done = {d["task"] for e, d in evs if e == "task" and d["state"] == "DONE"}
    assert done == {1, 2, 3, 4}
    assert evs[-1][1]["counts"]["DONE"] == 4
    r = svc.run(run["id"])
    assert r["state"] == "finished" and r["exit_code"] == 0
    assert r["started"] >= r["submitted"] and r["ended"] >= r["started"]
    assert r["counts"]["DONE"] == 4 and r["counts_by_name"] == {"square": {"DONE": 4}}
    page = svc.client.get(f"/runs/{run['id']}/tasks", params={"limit": 3, "offset": 1}).json()
    assert page["total"] == 4 and [t["id"] for t in page["tasks"]] == [2, 3, 4]
    only = svc.client.get(f"/runs/{run['id']}/tasks", params={"name": "nothing"}).json()
    assert only["total"] == 0
    t = svc.client.get(f"/runs/{run['id']}/tasks/3").json()["task"]
    assert [x["state"] for x in t["transitions"]][-1] == "DONE" and t["node"]
    logs = svc.client.get(f"/runs/{run['id']}/tasks/3/logs").json()["logs"]
    assert [(ln["level"], ln["line"]) for ln in logs] == [("STDOUT", "square of 2")]
    assert logs[0]["t"] > r["submitted_epoch"]
    # an ordinary run: `taskflow status` reads its journal
    out = subprocess.run([sys.executable, "-m", "taskflow", "status", r["journal"]],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "square: 4 done" in out.stdout, out.stdout + out.stderr


CONSOLE = '''
import sys
from taskflow import task, wait_on

@task(returns=int)
def one():
    return 1

print("the script says", wait_on(one()), flush=True)
print("and on stderr", file=sys.stderr, flush=True)
'''


def test_the_console_route_reads_and_follows_the_scripts_output(service):
    """The script's own stdout and stderr (console.log), paged by byte offset and
    followed as server-sent events; run times in ISO 8601 (UTC) with their epoch."""
    svc = service()
    rid = svc.submit(CONSOLE)["id"]
    with svc.client.stream("GET", f"/runs/{rid}/console", params={"follow": 1}) as s:
        assert s.status_code == 200
        events, name = [], None
        for line in s.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                events.append((name, json.loads(line[6:])))
                if name == "end":
                    break
    said = [d["line"] for e, d in events if e == "line"]
    assert "the script says 1" in said and "and on stderr" in said
    assert events[-1][0] == "end" and events[-1][1]["state"] == "finished"
    page = svc.client.get(f"/runs/{rid}/console").json()
    assert page["lines"] == said and page["more"] is False
    again = svc.client.get(f"/runs/{rid}/console", params={"offset": page["offset"]}).json()
    assert again == {"lines": [], "offset": page["offset"], "more": False}
    r = svc.run(rid)
    import datetime
    for key in ("submitted", "started", "ended"):
        when = datetime.datetime.fromisoformat(r[key].replace("Z", "+00:00"))
        assert r[key].endswith("Z") and abs(when.timestamp() - r[key + "_epoch"]) < 0.001


def test_follow_logs_stream_lines_as_they_come(service):
    svc = service()
    rid = svc.submit(SLOW_LINES)["id"]
    got = []
    with svc.client.stream("GET", f"/runs/{rid}/tasks/1/logs", params={"follow": 1}) as s:
        assert s.status_code == 200
        name = None
        for line in s.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                d = json.loads(line[6:])
                got.append((name, d))
                if name == "log" and d["line"] == "line 0":
                    # the first line arrived while the task still runs
                    assert svc.client.get(f"/runs/{rid}/tasks/1").json()["task"]["state"] \
                        in ("RUNNING", "DISPATCHED")
                if name == "end":
                    break
    assert [d["line"] for n, d in got if n == "log"] == ["line 0", "line 1", "line 2"]
    assert got[-1][0] == "end" and got[-1][1]["state"] == "DONE"


GATED_FAN = GATED.replace("print(wait_on(gate(", """
@task(returns=int)
def after(x):
    return x

g = gate(sys.argv[1], "")
print(sum(wait_on([after(g) for _ in range(5)])), wait_on(gate(""", 1)


def test_cancel_a_running_and_a_queued_run(service, tmp_path):
    svc = service("--max-runs", "1")
    gate = tmp_path / "never"
    first = svc.submit(GATED_FAN, gate)["id"]
    second = svc.submit(GATED, gate)["id"]
    svc.events(first, until=lambda e: e[0] == "task" and e[1]["state"] == "RUNNING")
    assert svc.run(second)["state"] == "queued"
    r = svc.client.post(f"/runs/{second}/cancel").json()
    assert r["state"] == "cancelled" and r["cancelling"] is False
    pid = _run_pid(svc, first)
    r = svc.client.post(f"/runs/{first}/cancel").json()
    assert r["cancelling"] is True
    evs = svc.events(first)
    assert evs[-1][1]["state"] == "cancelled"
    assert not _alive(pid)                                      # its process is gone
    assert svc.client.post(f"/runs/{first}/cancel").status_code == 409
    assert svc.run(second)["started"] is None                   # never started
    # the gate was interrupted; the five tasks waiting for it never started: cancelled
    states = {t["name"]: t["state"] for t in
              svc.client.get(f"/runs/{first}/tasks").json()["tasks"]}
    counts = svc.client.get(f"/runs/{first}/tasks", params={"state": "CANCELLED"}).json()
    assert states["gate"] == "INTERRUPTED" and counts["total"] == 5, states


def test_queue_order_priority_then_age_and_bounds(service, tmp_path):
    svc = service("--max-runs", "1", "--max-queued", "3", "--max-streams", "1")
    gate = tmp_path / "gate"
    a = svc.submit(GATED, gate, "a")["id"]
    svc.wait_state(a, "running")
    b = svc.submit(GATED, gate, "b")["id"]
    c = svc.submit(GATED, gate, "c", priority=5)["id"]
    d = svc.submit(GATED, gate, "d", priority=5)["id"]
    assert [svc.run(x)["queue_position"] for x in (c, d, b)] == [1, 2, 3]
    full = svc.client.post("/runs", json={"script": {"content": GATED}, "args": [str(gate)]})
    assert full.status_code == 429 and "max-queued" in full.json()["error"]
    with svc.client.stream("GET", f"/runs/{a}/events") as first_stream:
        assert first_stream.status_code == 200
        second_stream = svc.client.get(f"/runs/{b}/events")
        assert second_stream.status_code == 503 and "max-streams" in second_stream.json()["error"]
    gate.write_text("go")
    ends = {x: svc.wait_state(x, "finished") for x in (a, b, c, d)}
    order = sorted(ends, key=lambda x: ends[x]["started"])
    assert order == [a, c, d, b]


def test_restart_after_sigkill_keeps_every_run(service, tmp_path):
    workdir = tmp_path / "svc"
    svc = service("--max-runs", "1", workdir=workdir)
    done = svc.submit(SQUARES, 2)["id"]
    svc.wait_state(done, "finished")
    gate = tmp_path / "gate"
    busy = svc.submit(GATED, gate)["id"]
    svc.events(busy, until=lambda e: e[0] == "task" and e[1]["state"] == "RUNNING")
    waiting = svc.submit(SQUARES, 3)["id"]
    run_pid = svc.run(busy)["journal"] and _run_pid(svc, busy)
    token = svc.token
    svc.stop(signal.SIGKILL)
    for _ in range(400):                        # the run dies with the service
        if not _alive(run_pid):
            break
        time.sleep(0.05)
    assert not _alive(run_pid)
    again = service("--max-runs", "1", workdir=workdir)
    assert again.token == token                 # clients keep working across restarts
    assert "marked interrupted: " + busy in again.proc.stderr.readline() + \
        again.proc.stderr.readline() + again.proc.stderr.readline()
    states = {r["id"]: r["state"] for r in again.client.get("/runs").json()["runs"]}
    assert states[done] == "finished" and states[busy] == "interrupted"
    assert again.wait_state(waiting, "finished")["counts"]["DONE"] == 3  # the queue goes on
    assert again.run(busy)["reason"].startswith("the service stopped")


def _run_pid(svc, rid):
    rows = svc.client.get("/runs", params={"state": "running"}).json()["runs"]
    (row,) = [r for r in rows if r["id"] == rid]
    from taskflow.journal.reader import Journal
    with Journal(row["journal"]) as j:
        return j.run()["pid"]


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def test_tokens_and_private_files(service, tmp_path):
    svc = service()
    none = httpx.get(svc.url + "/runs")
    assert none.status_code == 401 and none.headers["www-authenticate"] == "Bearer"
    assert "Authorization: Bearer" in none.json()["error"]
    wrong = httpx.get(svc.url + "/runs", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 403 and "wrong token" in wrong.json()["error"]
    basic = httpx.get(svc.url + "/runs", headers={"Authorization": f"Basic {svc.token}"})
    assert basic.status_code == 403
    doc = httpx.get(svc.url + "/openapi.json").json()
    assert {"/api/v1/runs", "/api/v1/runs/{rid}/events", "/api/v1/nodes"} <= set(doc["paths"])
    assert stat.S_IMODE(os.stat(tmp_path / "svc" / "service.token").st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "svc").st_mode) == 0o700
    assert svc.url.startswith("http://127.0.0.1:")


def test_bad_input_gets_the_right_status_and_the_service_goes_on(service, tmp_path):
    svc = service("--max-body", "4096")
    c = svc.client
    r = c.post("/runs", content=b'{"script": ', headers={"Content-Type": "application/json"})
    assert r.status_code == 400 and "JSON object" in r.json()["error"]
    r = c.post("/runs", json={"args": ["1"]})
    assert r.status_code == 422 and "script" in r.json()["error"]
    r = c.post("/runs", json={"script": "wf.py", "colour": "red"})
    assert r.status_code == 422 and "colour" in r.json()["error"]
    r = c.post("/runs", json={"script": "flows/missing.py"})
    assert r.status_code == 422 and "does not exist under the workdir" in r.json()["error"]
    r = c.post("/runs", json={"script": "../../etc/passwd"})
    assert r.status_code == 422 and "outside the service's workdir" in r.json()["error"]
    r = c.post("/runs", json={"script": {"content": "x" * 5000}})
    assert r.status_code == 413 and "--max-body" in r.json()["error"]
    r = c.post("/runs", json={"script": "wf.py", "workers": 0})
    assert r.status_code == 422 and "workers" in r.json()["error"]
    assert c.get("/runs/abcdef123456").status_code == 404
    assert c.get("/runs/../../x").status_code == 404
    assert c.get("/no/such/thing").json()["error"].startswith("no such endpoint")
    assert c.get("/runs", params={"state": "odd"}).status_code == 422
    # a script under the workdir, by path; it fails: the answer says why
    os.makedirs(tmp_path / "svc" / "flows")
    (tmp_path / "svc" / "flows" / "bad.py").write_text("raise ValueError('no input given')\n")
    rid = c.post("/runs", json={"script": "flows/bad.py"}).json()["id"]
    r = svc.wait_state(rid, "failed")
    assert r["exit_code"] == 1 and any("no input given" in ln for ln in r["console_tail"])
    assert c.get(f"/runs/{rid}/tasks/1").status_code == 404
    assert c.get(f"/runs/{rid}/tasks/1/logs", params={"level": "LOUD"}).status_code == 422
    assert c.post(f"/runs/{rid}/cancel").status_code == 409
    assert c.get("/runs").status_code == 200 and svc.proc.poll() is None


def test_nodes_show_the_load_of_running_runs(service, tmp_path):
    svc = service()
    gate = tmp_path / "gate"
    rid = svc.submit(GATED, gate)["id"]
    svc.events(rid, until=lambda e: e[0] == "task" and e[1]["state"] == "RUNNING")
    nodes = []
    for _ in range(200):                    # the first sample comes after the handshake
        got = svc.client.get("/nodes").json()
        nodes = [n for n in got["nodes"] if n["run"] == rid and n["sample"]]
        if nodes:
            break
        time.sleep(0.1)
    gate.write_text("go")
    assert nodes and {"cpu", "mem", "load1", "disk", "net_sent"} <= set(nodes[0]["sample"])
    assert nodes[0]["slots"] >= 1 and "cpu" in got["host"]
    svc.wait_state(rid, "finished")


def test_a_stopped_service_interrupts_its_runs_and_keeps_the_queue(service, tmp_path):
    workdir = tmp_path / "svc"
    svc = service("--max-runs", "1", workdir=workdir)
    gate = tmp_path / "gate"
    busy = svc.submit(GATED, gate)["id"]
    svc.events(busy, until=lambda e: e[0] == "task" and e[1]["state"] == "RUNNING")
    queued = svc.submit(GATED, gate)["id"]
    svc.stop(signal.SIGTERM)                    # a clean stop: uvicorn, then the runs
    assert svc.proc.returncode == 0
    gate.write_text("go")
    again = service("--max-runs", "1", workdir=workdir)
    r = again.run(busy)
    assert r["state"] == "interrupted" and r["reason"] == "the service was stopped"
    assert again.wait_state(queued, "finished")["exit_code"] == 0


def test_a_damaged_journal_is_a_run_listed_as_damaged_and_409_with_one_line(service):
    svc = service()
    run = svc.submit(SQUARES, 3, workers=1)
    rid = svc.wait_state(run["id"], "finished")["id"]
    journal = os.path.join(svc.run(rid)["journal"], "journal.db")
    with open(journal, "r+b") as f:                 # its header: not a database any more
        f.write(b"this is not what was written here" * 4)
    listed = svc.client.get("/runs")
    assert listed.status_code == 200, listed.text
    (row,) = listed.json()["runs"]
    assert row["state"] == "finished" and f"{journal} is damaged" in row["journal_damaged"]
    one = svc.client.get(f"/runs/{rid}")
    assert one.status_code == 200 and one.json()["journal_damaged"] == row["journal_damaged"]
    for page in (f"/runs/{rid}/tasks", f"/runs/{rid}/tasks/1", f"/runs/{rid}/tasks/1/logs"):
        r = svc.client.get(page)
        assert r.status_code == 409, (page, r.text)
        assert f"{journal} is damaged (file is not a database)" in r.json()["error"]
        assert "\n" not in r.json()["error"]
    evs = svc.events(rid)
    assert evs[-1][0] == "end" and evs[-1][1]["damaged"] is True
    assert svc.client.get("/nodes").status_code == 200
