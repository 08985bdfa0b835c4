"""Strangers and bad input against what listens (issue 28): the REST service (a real
`taskflow serve`, httpx), the web monitor (the real server), the dial-back port (a real
master's server and a real agent), and the uvicorn guard under both (in-process, with
short deadlines). Threads, processes and sockets are counted with psutil.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

import psutil
import pytest

httpx = pytest.importorskip("httpx", reason="pip install -e '.[test]' (httpx)")
pytest.importorskip("fastapi", reason="pip install -e '.[serve]'")
pytest.importorskip("a2wsgi", reason="pip install -e '.[monitor]'")

import taskflow  # noqa: E402
from taskflow import netguard  # noqa: E402
from taskflow.providers import dialback  # noqa: E402
from taskflow.serve.store import Store  # noqa: E402
from support import serve  # noqa: E402
from support.serve import GATED, SQUARES  # noqa: E402

service = serve.service        # the same fixture: services started and stopped by it


def _silent(port: int, n: int, first: bytes = b"") -> list[socket.socket]:
    out = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        if first:
            s.sendall(first)
        out.append(s)
    return out


# the head of a TLS record of 16 KiB: a TLS server waits for the rest, byte after byte
TLS_RECORD = b"\x16\x03\x01\x40\x00"


def _closed_by_server(s: socket.socket, within: float) -> bool:
    s.settimeout(within)
    try:
        while True:
            got = s.recv(4096)
            if not got:
                return True
    except (socket.timeout, TimeoutError):
        return False
    except OSError:
        return True


# -- the guard (in-process uvicorn, short deadlines) --------------------------------------
async def _echo(scope, receive, send):
    body = b""
    while True:
        msg = await receive()
        body += msg.get("body", b"")
        if not msg.get("more_body"):
            break
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"got %d" % len(body)})


async def _big(scope, receive, send):
    """Echo, or 1 MB for GET /big."""
    if scope["path"] != "/big":
        await _echo(scope, receive, send)
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"x" * 2**20})


@pytest.fixture
def guarded():
    import uvicorn
    guard = netguard.Guard(head_timeout=0.6, body_timeout=0.6, per_client=8, max_waiting=64,
                           send_timeout=0.6)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(256)
    server = uvicorn.Server(netguard.config(_big, guard))
    t = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()
    while not server.started:
        time.sleep(0.01)
    yield guard, sock.getsockname()[1]
    server.should_exit = True
    t.join(5)


def test_the_guard_closes_silent_and_slow_connections_at_their_deadlines(guarded):
    guard, port = guarded
    silent, = _silent(port, 1)
    head = socket.create_connection(("127.0.0.1", port))
    body = socket.create_connection(("127.0.0.1", port))
    body.sendall(b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
    end = time.monotonic() + 3
    while time.monotonic() < end and guard.expired < 3:
        head.send(b"G")                 # a byte now and then does not extend the deadline
        body.send(b"x")
        time.sleep(0.1)
    assert guard.expired == 3
    for s in (silent, head, body):
        assert _closed_by_server(s, 1.0)
    r = httpx.post(f"http://127.0.0.1:{port}/", content=b"abc", timeout=5)
    assert r.status_code == 200 and r.text == "got 3"
    got = _raw(port, b"\x16\x03\x01 not http\r\n\r\n")         # (TLS to a plain port)
    assert got.startswith(b"HTTP/1.1 400") and b'{"error": "Invalid HTTP request' in got


def test_the_guard_closes_a_connection_that_does_not_read_its_responses(guarded):
    """A request in the application is timed out too: its response waits for the client
    at most send_timeout; the pipelined requests behind it are not read meanwhile."""
    guard, port = guarded
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    req = b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n"
    s.settimeout(0.2)
    sent = 0
    try:
        while sent < 64 * 2**20:            # it stops reading them: the send blocks
            sent += s.send(req * 1000)
    except (TimeoutError, socket.timeout):
        pass
    assert sent < 64 * 2**20, "the server read every pipelined request"
    assert _closed_by_server(s, 30.0), "a connection that never reads was kept"
    assert guard.expired >= 1 and not guard.open
    r = httpx.get(f"http://127.0.0.1:{port}/", timeout=5)
    assert r.status_code == 200


def test_the_guard_keeps_room_for_a_new_client_and_sets_tcp_nodelay(guarded):
    guard, port = guarded
    strangers = _silent(port, 20)        # 20 from this address, 8 may wait
    time.sleep(0.2)
    assert guard.evicted == 12 and len(guard.waiting) == 8
    assert all(_closed_by_server(s, 0.5) for s in strangers[:12])
    conn = next(iter(guard.waiting))
    sock = conn.transport.get_extra_info("socket")
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as c:
        assert c.get("/").text == "got 0"           # served while strangers hold sockets
    for s in strangers:
        s.close()


# -- the service --------------------------------------------------------------------------
def test_a_poisoned_submission_is_refused_and_the_service_goes_on(service, tmp_path):
    svc = service("--max-body", str(2**20))
    c = svc.client
    runs = tmp_path / "svc" / "runs"
    before = set(os.listdir(runs))
    ok_script = {"name": "wf.py", "content": SQUARES}
    bad = [
        ({"script": ok_script, "args": ["a\x00b"]}, "args.0", "NUL"),
        ({"script": ok_script, "args": ["x", "\ud800"]}, "args.1", "lone surrogate"),
        ({"script": "flows/\x00.py"}, "script", "NUL"),
        ({"script": {"name": "wf.py", "content": "print('\udcff')"}}, "content",
         "lone surrogate"),
        ({"script": {"name": "..", "content": SQUARES}}, "name", "not a file name"),
        ({"script": {"name": ".", "content": SQUARES}}, "name", "not a file name"),
        ({"script": {"name": "console.log", "content": SQUARES}}, "name", "uses"),
        ({"script": ok_script, "cluster": {"name": "wf.py", "content": "nodes: []"}},
         "cluster", "is the script's"),
        ({"script": ok_script, "args": ["y" * 40000]}, "args.0", "at most 32768"),
    ]
    for body, field, why in bad:
        r = c.post("/runs", content=json.dumps(body).encode(),      # (\u escapes: as sent)
                   headers={"Content-Type": "application/json"})
        assert r.status_code == 422, (body, r.text)
        err = r.json()["error"]
        assert field in err and why in err, err
    assert set(os.listdir(runs)) == before, "a refused submission left a run directory"
    r = c.post("/runs", content=_chunks(5 * 2**20), headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "--max-body" in r.json()["error"]
    assert c.get("/runs").status_code == 200
    rid = svc.submit(SQUARES, 3)["id"]
    assert svc.wait_state(rid, "finished", "failed")["state"] == "finished"


def _chunks(n: int):
    """A body sent chunked (no Content-Length)."""
    piece = b" " * 65536
    for _ in range(n // len(piece)):
        yield piece


def test_a_run_that_cannot_start_fails_and_the_queue_goes_on(service, tmp_path):
    """One an older service accepted (stored with a NUL), one whose directory vanished:
    each is failed with its reason, and the runs behind them start."""
    workdir = tmp_path / "svc"
    svc = service("--max-runs", "1", workdir=workdir)
    gate = tmp_path / "gate"
    first = svc.submit(GATED, gate)["id"]
    svc.wait_state(first, "running")
    gone = svc.submit(SQUARES, 2)["id"]
    after = svc.submit(SQUARES, 2)["id"]
    import shutil
    shutil.rmtree(workdir / "runs" / gone)
    gate.write_text("go")
    r = svc.wait_state(gone, "failed")
    assert r["reason"].startswith("could not start") and r["started"] is not None
    assert svc.wait_state(after, "finished")["exit_code"] == 0
    svc.stop(signal.SIGTERM)
    store = Store(str(workdir / "service.db"))      # what an older service let in
    os.makedirs(workdir / "runs" / "oldbad000001")
    store.add("oldbad000001", 10, str(workdir / "runs" / after / "wf.py"), ["a\x00b"], {},
              str(workdir / "runs" / "oldbad000001"))
    store.close()
    again = service("--max-runs", "1", workdir=workdir)
    nxt = again.submit(SQUARES, 2)["id"]
    old = again.run("oldbad000001")
    assert old["state"] == "failed" and "NUL" in old["reason"]
    assert again.wait_state(nxt, "finished")["exit_code"] == 0
    assert again.client.get("/runs").status_code == 200


def test_strangers_holding_sockets_do_not_stop_the_service(service):
    """150 silent connections and 200 half-sent requests: a request with the token is
    served; the service's threads and sockets stay bounded."""
    svc = service()
    port = urllib.parse.urlparse(svc.url).port
    proc = psutil.Process(svc.proc.pid)
    threads = proc.num_threads()
    strangers = _silent(port, 150)
    strangers += _silent(port, 200, b"GET /api/v1/runs HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    with httpx.Client(base_url=svc.url, timeout=10,
                      headers={"Authorization": f"Bearer {svc.token}"}) as c:
        for _ in range(3):
            assert c.get("/runs").status_code == 200
    open_now = [k for k in proc.net_connections("tcp") if k.status == "ESTABLISHED"]
    assert len(open_now) <= netguard.MAX_WAITING + 8
    assert proc.num_threads() <= threads + 4
    assert sum(_closed_by_server(s, 0.01) for s in strangers) >= 350 - netguard.PER_CLIENT - 2
    for s in strangers:
        s.close()
    r = _raw(port, b"GET /api/v1/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xe9\xff\r\n"
                   b"Connection: close\r\n\r\n")
    assert r.startswith(b"HTTP/1.1 403") and b'"error"' in r


def _raw(port: int, request: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(request)
        out = b""
        while True:
            got = s.recv(65536)
            if not got:
                return out
            out += got


# -- the monitor --------------------------------------------------------------------------
def test_the_monitor_is_bounded_and_compares_its_token_as_bytes(tmp_path, monkeypatch):
    from taskflow.monitor import Monitor
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs"), echo_logs=False) as rt:
        pass
    guard = netguard.Guard(head_timeout=1.0)
    mon = Monitor(str(tmp_path / "runs"), rt.run_id, guard=guard).start()
    try:
        me = psutil.Process()
        base = me.num_threads()
        strangers = _silent(mon.port, 150)
        time.sleep(0.3)
        assert me.num_threads() <= base + 2, "a thread per connection"
        r = httpx.get(f"http://127.0.0.1:{mon.port}/api/runs",
                      headers={"Authorization": f"Bearer {mon.token}"}, timeout=10)
        assert r.status_code == 200 and r.json()["runs"]
        for token in ("é", "\u2603" * 40, "%FF%FE"):
            r = httpx.get(f"http://127.0.0.1:{mon.port}/api/runs", params={"token": token},
                          timeout=10)
            assert r.status_code == 403 and r.json()["error"] == "wrong token"
        r = _raw(mon.port, b"GET /api/runs HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
                           b"\xe9\xff\r\nConnection: close\r\n\r\n")
        assert r.startswith(b"HTTP/1.1 403")
        assert all(_closed_by_server(s, 3.0) for s in strangers[-netguard.PER_CLIENT:])
        assert me.num_threads() <= base + 12
    finally:
        mon.stop()


# -- the dial-back port -------------------------------------------------------------------
def test_a_real_agent_joins_while_32_slow_strangers_hold_the_dialback_port(tmp_path):
    joined: list = []
    srv = dialback.DialbackServer(lambda meta: {"name": "real", "slots": 1}, joined.append,
                                  ready_timeout=30.0)
    stop = threading.Event()
    held = []

    def slow_stranger() -> None:        # a byte every 4 s; again as soon as it is dropped
        while not stop.is_set():
            try:
                s = socket.create_connection((srv.host, srv.port), timeout=5)
                held.append(s)
                s.send(TLS_RECORD)
                while not stop.wait(4.0):
                    s.send(b"\x01")
            except OSError:
                time.sleep(0.05)

    before = threading.active_count()
    for _ in range(32):
        threading.Thread(target=slow_stranger, daemon=True).start()
    proc = None
    try:
        time.sleep(1.0)
        assert threading.active_count() <= before + 32 + dialback.MAX_HANDSHAKES + 1
        secret = dialback.write_secret(str(tmp_path / "secret"), srv.secret)
        env = dict(os.environ, **{dialback.SECRET_FILE_ENV: secret},
                   PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        proc = subprocess.Popen([sys.executable, "-m", "taskflow.node", "--connect",
                                 srv.address], env=env, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        while not joined and time.time() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert joined, f"the real agent was not admitted: {proc.poll()} {srv.refused[-3:]}"
        assert joined[0].info["slots"] == 1
        made_room = [m for m in srv.refused if "closed to make room" in m]
        assert made_room, "strangers kept their places"
    finally:
        stop.set()
        for h in joined:
            h.close()
        if proc is not None:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
        for s in held:
            s.close()
        srv.close()
    assert proc.returncode == 0, proc.stderr.read() if proc.stderr else ""


def test_one_deadline_for_the_whole_dialback_handshake():
    """A stranger that sends a byte every 0.5 s (each read is quick) is dropped at the
    handshake's deadline all the same."""
    srv = dialback.DialbackServer(lambda meta: {"name": "x", "slots": 1}, lambda h: None)
    try:
        s = socket.create_connection((srv.host, srv.port), timeout=5)
        s.send(TLS_RECORD)
        t0 = time.monotonic()
        closed = False
        while time.monotonic() - t0 < dialback.AUTH_TIMEOUT + 3:
            try:
                s.send(b"\x01")
            except OSError:
                closed = True
                break
            if _closed_by_server(s, 0.5):
                closed = True
                break
        assert closed, "a byte now and then kept the handshake open past its deadline"
        assert any(f"no complete handshake within {dialback.AUTH_TIMEOUT:g} s" in m
                   for m in srv.refused)
    finally:
        srv.close()
