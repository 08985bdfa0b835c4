"""The web monitor: the JSON API with and without a token, and the page in headless Chromium."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

import pytest

import taskflow
from taskflow.journal import Journal
from taskflow.monitor import Monitor

import observe_tasks as ot

ARTIFACTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                         "test-artifacts")


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
            with pytest.raises(taskflow.TaskError):
                taskflow.wait_on(ot.boom(c))
    finally:
        os.chdir(old)
    mon = Monitor(str(tmp / "runs"), rt.run_id).start()
    yield rt, mon
    mon.stop()


def test_the_page_escapes_what_it_is_given(served):
    """A run name from the URL is a value in the page's script, never script itself."""
    _, mon = served
    evil = '";alert(1);//</script><script>alert(2)</script>'
    code, html = _get(f"http://127.0.0.1:{mon.port}/?run={urllib.parse.quote(evil)}", mon.token)
    assert code == 200
    assert evil not in html and "</script><script>alert(2)" not in html
    line = next(ln for ln in html.splitlines() if ln.startswith("const RUN = "))
    literal = line[len("const RUN = "):line.index(", TOKEN = ")]
    assert json.loads(literal) == evil              # the same text, as a string literal


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


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def _browse(url: str, *extra: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory() as profile:
        return subprocess.run(
            [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
             "--window-size=1200,800", "--virtual-time-budget=15000", *extra, url],
            capture_output=True, text=True, timeout=90)


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed (apt-get install chromium)")
def test_page_in_headless_chromium(served):
    rt, mon = served
    url = mon.url + "&select=1"          # what a click on task 1 does
    dom = ""
    for _ in range(5):                   # poll: the page fills itself in from the API
        dom = _browse(url, "--dump-dom").stdout
        if "out 2" in dom and 'id="task-4"' in dom:
            break
        time.sleep(1)
    for tid in (1, 2, 3, 4):
        assert f'id="task-{tid}"' in dom
    assert 'data-state="DONE"' in dom and 'data-state="FAILED"' in dom
    assert "Logs of task 1" in dom
    for line in ("out 0", "err 0", "out 2", "err 2"):
        assert line in dom
    assert 'id="count-DONE">done: 3' in dom
    os.makedirs(ARTIFACTS, exist_ok=True)
    shot = os.path.join(ARTIFACTS, "monitor.png")
    if os.path.exists(shot):
        os.unlink(shot)
    r = _browse(url, f"--screenshot={shot}")
    assert os.path.isfile(shot), r.stderr[-2000:]
    with open(shot, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.skipif(_chromium() is None, reason="chromium is not installed")
def test_live_monitor_during_run(tmp_path, monkeypatch):
    """`--monitor` shape: the page served while tasks are still running shows them."""
    monkeypatch.chdir(tmp_path)
    rt = taskflow.Runtime(workers=2, run_dir=str(tmp_path / "runs"), echo_logs=False).start()
    mon = Monitor(str(tmp_path / "runs"), rt.run_id).start()
    try:
        first = ot.nap(0.1)
        ot.nap(60.0)                              # still running when the page is read
        taskflow.wait_on(first)
        for _ in range(50):
            code, info = _get(f"http://127.0.0.1:{mon.port}/api/runs/{rt.run_id}", mon.token)
            if code == 200 and info["counts"]["DONE"] >= 1 and info["counts"]["RUNNING"] >= 1:
                break
            time.sleep(0.2)
        dom = ""
        for _ in range(8):                        # poll: the page fills itself in from the API
            dom = _browse(mon.url + "&select=1", "--dump-dom").stdout
            if 'data-state="RUNNING"' in dom and "slept 0.1" in dom:
                break
            time.sleep(1)
        os.makedirs(ARTIFACTS, exist_ok=True)
        with open(os.path.join(ARTIFACTS, "monitor-live.html"), "w") as fh:
            fh.write(dom)                         # what the browser saw, for a failing run
        # the node says when a task starts: the long one is running, not only dispatched
        assert 'data-state="RUNNING"' in dom and 'id="task-2"' in dom
        assert 'data-state="DONE"' in dom and "slept 0.1" in dom
        assert ">running<" in dom
    finally:
        mon.stop()
        rt.stop(wait=False)
    with Journal(rt.run_dir) as j:
        assert j.run()["state"] in ("finished", "failed")
