"""The web monitor: the JSON API with and without a token, and the page in headless Chromium."""
from __future__ import annotations

import html as htmllib
import json
import os
import re
import shutil
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET

import pytest

import taskflow
from taskflow.journal import Journal
from taskflow.monitor import Monitor

from support import browser
from support import observe_tasks as ot

SVG = "{http://www.w3.org/2000/svg}"


def _get(url: str, token: str | None = None) -> tuple[int, dict | str]:
    req = urllib.request.Request(url)
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            body = r.read().decode()
            return r.status, json.loads(body) if "json" in r.headers["Content-Type"] else body
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mon")
    old = os.getcwd()
    os.chdir(tmp)
    try:
        with taskflow.Runtime(workers=2, run_dir=str(tmp / "runs"), echo_logs=False) as rt:
            a = ot.chatty(3)
            b = ot.add(a, 1)
            c = ot.add(b, a)
            ot.boom(c)              # a failure the program never meets: the run fails
    finally:
        os.chdir(old)
    mon = Monitor(str(tmp / "runs"), rt.run_id).start()
    yield rt, mon
    mon.stop()


def test_the_page_escapes_what_it_is_given(served):
    """A run name from the URL is an attribute value in the page, never markup or script."""
    _, mon = served
    evil = '";alert(1);//</script><script>alert(2)</script>'
    code, html = _get(f"http://127.0.0.1:{mon.port}/?run={urllib.parse.quote(evil)}", mon.token)
    assert code == 200
    assert evil not in html and "</script><script>alert(2)" not in html
    m = re.search(r'<body data-run="([^"]*)"', html)
    assert m is not None and "<" not in m.group(1)
    assert htmllib.unescape(m.group(1)) == evil     # the same text, as an attribute value


def test_binds_localhost_and_needs_token(served):
    rt, mon = served
    assert mon.host == "127.0.0.1" and mon.url.startswith(f"http://127.0.0.1:{mon.port}/?token=")
    base = f"http://127.0.0.1:{mon.port}"
    for path in ("/", "/api/runs", f"/api/runs/{rt.run_id}/tasks"):
        assert _get(base + path)[0] == 401
        assert _get(base + path, token="wrong")[0] == 403
        assert _get(base + path + "?token=wrong")[0] == 403
    assert _get(base + f"/?token={mon.token}")[0] == 200


def test_json_api(served):
    rt, mon = served
    base, tok = f"http://127.0.0.1:{mon.port}/api", mon.token
    code, runs = _get(base + "/runs", tok)
    assert code == 200 and [r["run_id"] for r in runs["runs"]] == [rt.run_id]
    code, info = _get(base + "/runs/latest", tok)
    assert info["run"]["state"] == "failed" and info["counts"]["DONE"] == 3
    assert info["by_name"]["add"] == {"DONE": 2}
    code, tasks = _get(base + f"/runs/{rt.run_id}/tasks", tok)
    assert [t["state"] for t in tasks["tasks"]] == ["DONE", "DONE", "DONE", "FAILED"]
    assert sorted(map(tuple, tasks["edges"])) == [(1, 2), (1, 3), (2, 3), (3, 4)]
    code, one = _get(base + f"/runs/{rt.run_id}/tasks/4", tok)
    assert one["task"]["deps"] == [3] and "boom" in one["task"]["error"]
    code, logs = _get(base + f"/runs/{rt.run_id}/logs?task=1&level=STDERR", tok)
    assert [x["line"] for x in logs["logs"]] == ["err 0", "err 1", "err 2"]
    code, logs = _get(base + f"/runs/{rt.run_id}/logs?task=1&after={logs['logs'][0]['id']}", tok)
    assert logs["logs"][0]["line"] == "out 1"
    code, nodes = _get(base + f"/runs/{rt.run_id}/nodes", tok)
    assert nodes["nodes"][0]["slots"] == 2 and "samples" in nodes
    code, rep = _get(base + f"/runs/{rt.run_id}/report", tok)
    assert rep["tasks"] == 4 and rep["critical_path"][-1] == 4
    assert _get(base + "/runs/nosuch", tok)[0] == 404
    assert _get(base + f"/runs/{rt.run_id}/tasks/99", tok)[0] == 404


def _events(url: str, token: str, until: str, timeout: float = 30.0) -> list[tuple[str, dict]]:
    """Read a server-sent event stream until an event of kind ``until`` (or the time-out)."""
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
    out: list[tuple[str, dict]] = []
    deadline = time.time() + timeout
    with urllib.request.urlopen(req, timeout=timeout) as r:
        assert r.headers["Content-Type"].startswith("text/event-stream")
        kind = None
        while time.time() < deadline:
            line = r.readline().decode()
            if not line:
                break
            if line.startswith("event: "):
                kind = line[7:].strip()
            elif line.startswith("data: "):
                out.append((kind, json.loads(line[6:])))
                if kind == until:
                    break
    return out


def test_stream_pushes_a_snapshot_then_only_what_changed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rt = taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), echo_logs=False).start()
    mon = Monitor(str(tmp_path / "runs"), rt.run_id).start()
    try:
        done = [ot.add(i, 1) for i in range(20)]
        taskflow.wait_on(done)
        late = ot.nap(1.5)
        base = f"http://127.0.0.1:{mon.port}/api/runs/{rt.run_id}"
        for _ in range(100):                       # the journal has the nap's row
            if _get(base, mon.token)[1]["counts"]["total"] == 21:
                break
            time.sleep(0.05)
        evs = _events(base + "/stream", mon.token, until="update")
        kind, snap = evs[0]
        assert kind == "snapshot" and snap["detail"] is True
        assert {t["id"] for t in snap["tasks"]} == set(range(1, 22))
        assert set(snap["colours"]) == {"add", "nap"} and snap["run"]["state"] == "running"
        # the next update names the nap only: the 20 finished tasks are not sent again
        kind, up = evs[-1]
        assert kind == "update" and [t["id"] for t in up["tasks"]] == [21]
        assert up["tasks"][0]["state"] in ("RUNNING", "DONE") and up["counts"]["DONE"] >= 20
        taskflow.wait_on(late)
    finally:
        rt.stop()
    # a finished run: the snapshot, then the end
    evs = _events(base + "/stream", mon.token, until="end")
    assert [k for k, _ in evs] == ["snapshot", "end"] and evs[-1][1]["state"] == "finished"
    evs = _events(base + "/logs/stream?task=21", mon.token, until="end")
    assert evs[0][0] == "lines" and evs[0][1][0]["line"] == "slept 1.5"
    assert evs[-1][1]["lines"] == 1 and evs[-1][1]["state"] == "DONE"
    mon.stop()


def test_stream_count_is_bounded(served):
    from taskflow.monitor import stream
    rt, mon = served
    mon.streams.open = stream.MAX_STREAMS          # as if every stream were taken
    try:
        code, body = _get(f"http://127.0.0.1:{mon.port}/api/runs/{rt.run_id}/stream", mon.token)
        assert code == 503 and "too many open monitor pages" in body
    finally:
        mon.streams.open = 0


def test_dag_is_drawn_without_graphviz_and_becomes_the_name_graph_when_large(served, monkeypatch):
    from taskflow.monitor import dag
    which = shutil.which                 # the monitor's picture never needs Graphviz
    monkeypatch.setattr(shutil, "which",
                        lambda name, *a, **k: None if name in ("dot", "neato") else which(name))
    rt, mon = served
    url = f"http://127.0.0.1:{mon.port}/api/runs/{rt.run_id}/dag"
    code, out = _get(url, mon.token)
    assert code == 200 and out["kind"] == "tasks" and out["tasks"] == 4
    root = ET.fromstring(out["svg"])
    ids = {g.get("id") for g in root.iter(SVG + "g")}
    assert {"task-1", "task-2", "task-3", "task-4"} <= ids
    edges = [g for g in root.iter(SVG + "g") if g.get("class") == "edge"]
    # 1->2, 2->3, 3->4 drawn; 1->3 is implied by 1->2->3, so it is left out
    assert len(edges) == 3 and out["hidden_edges"] == 1
    assert all(e.find(SVG + "polygon") is not None for e in edges)       # arrow heads
    monkeypatch.setattr(dag, "TASK_GRAPH_MAX", 2)
    code, out = _get(url, mon.token)
    assert code == 200 and out["kind"] == "names" and out["names"] == ["add", "boom", "chatty"]
    root = ET.fromstring(out["svg"])
    assert {"name-0", "name-1", "name-2"} <= {g.get("id") for g in root.iter(SVG + "g")}
    titles = {g.find(SVG + "title").text for g in root.iter(SVG + "g") if g.get("class") == "edge"}
    assert titles == {"n2->n0", "n0->n0", "n0->n1"}    # chatty -> add (-> add) -> boom


def test_page_in_headless_chromium(served):
    rt, mon = served
    with browser.page() as pg:
        pg.goto(mon.url + "&select=4")
        pg.wait_for_selector('#dag g.task[data-state="FAILED"]')
        pg.wait_for_selector("#logs .lognote")
        states = {g.get_attribute("id"): g.get_attribute("data-state")
                  for g in pg.query_selector_all("#dag g.task")}
        assert states == {"task-1": "DONE", "task-2": "DONE", "task-3": "DONE", "task-4": "FAILED"}
        assert len(pg.query_selector_all("#dag g.edge polygon")) == 3        # arrows
        assert pg.inner_text("#count-DONE") == "done: 3" and pg.inner_text("#state") == "failed"
        assert pg.inner_text("#logs-title") == "Logs of task 4"
        logs = pg.inner_text("#logs")
        assert "about to fail" in logs and "ValueError: boom" in logs
        # the Gantt chart: every task that ran is a bar, on the node's 2 slots
        assert len(pg.query_selector_all("#gantt rect.bar")) == 4
        assert {t.text_content() for t in pg.query_selector_all("#gantt text")} >= {"local/0",
                                                                                   "local/1"}
        # the table: search and filter
        assert len(pg.query_selector_all("#tasks tbody tr")) == 4
        pg.fill("#search", "add")
        pg.wait_for_function("document.querySelectorAll('#tasks tbody tr').length == 2")
        pg.fill("#search", "")
        pg.select_option("#filter", "FAILED")
        pg.wait_for_function("document.querySelectorAll('#tasks tbody tr').length == 1")
        assert pg.query_selector("#tasks tbody tr").get_attribute("data-id") == "4"
        # a click on a task's box follows its logs
        pg.click("#task-1")
        pg.wait_for_function("document.querySelector('#logs').innerText.includes('out 2')")
        assert "err 0" in pg.inner_text("#logs")
        shot = browser.artifact("monitor.png")
        pg.screenshot(path=shot, full_page=True)
        assert browser.is_png(shot) and pg.errors == []


def test_live_monitor_during_run(tmp_path, monkeypatch):
    """`--monitor` shape: the page served while tasks run shows them running, then done."""
    monkeypatch.chdir(tmp_path)
    rt = taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), echo_logs=False).start()
    mon = Monitor(str(tmp_path / "runs"), rt.run_id).start()
    try:
        first = ot.nap(0.1)
        release = tmp_path / "release"
        long = ot.hold_until(str(release))        # runs until the page has seen it running
        taskflow.wait_on(first)
        with browser.page() as pg:
            pg.goto(mon.url + "&select=2")
            pg.wait_for_selector('#dag g.task[data-state="RUNNING"]')
            # the node says when a task starts: running, not only dispatched
            assert pg.get_attribute("#task-2", "data-state") == "RUNNING"
            assert pg.get_attribute("#task-1", "data-state") == "DONE"
            assert pg.inner_text("#count-RUNNING") == "running: 1"
            running_bar = pg.query_selector('#gantt rect.bar[data-state="RUNNING"]')
            assert running_bar is not None
            with open(browser.artifact("monitor-live.html"), "w") as fh:
                fh.write(pg.content())            # what the browser saw, for a failing run
            # pushed, not polled: the same page sees the task end and its line come in
            release.touch()
            pg.wait_for_selector('#task-2[data-state="DONE"]', timeout=30000)
            pg.wait_for_function("document.querySelector('#logs').innerText.includes('released')")
            assert pg.errors == []
        taskflow.wait_on(long)
    finally:
        mon.stop()
        rt.stop(wait=False)
    with Journal(rt.run_dir) as j:
        assert j.run()["state"] in ("finished", "failed")


def test_page_of_a_large_run_shows_the_graph_of_names(served, monkeypatch):
    """Above the limits the page draws one box per task name and searches on the server."""
    from taskflow.monitor import dag, stream
    monkeypatch.setattr(dag, "TASK_GRAPH_MAX", 2)
    monkeypatch.setattr(stream, "DETAIL_MAX", 2)
    rt, mon = served
    with browser.page() as pg:
        pg.goto(mon.url)
        pg.wait_for_selector("#dag g.name[data-state]")
        boxes = {g.get_attribute("data-name"): g for g in pg.query_selector_all("#dag g.name")}
        assert set(boxes) == {"add", "boom", "chatty"}
        texts = [t.text_content() for t in boxes["add"].query_selector_all("text")]
        assert texts == ["add", "2 done"]
        assert boxes["boom"].get_attribute("data-state") == "FAILED"
        assert "one box per task name" in pg.inner_text("#dag-kind")
        assert len(pg.query_selector_all("#dag g.edge polygon")) == 3
        # the table asks the server
        pg.wait_for_function("document.querySelectorAll('#tasks tbody tr').length == 4")
        pg.fill("#search", "chatty")
        pg.wait_for_function("document.querySelectorAll('#tasks tbody tr').length == 1")
        # a click on a name's box searches for it
        pg.click("#name-0")
        pg.wait_for_function("document.querySelectorAll('#tasks tbody tr').length == 2")
        assert pg.input_value("#search") == "add" and pg.errors == []
