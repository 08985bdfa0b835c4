"""Strangers without the token against the web monitor and the REST service, each a real
server process (issue 43): a 512 MB body, 100 connections that pipeline requests and
never read, a connect flood from one address while the token holder works from another;
and the dial-back port's log under a stranger's flood. Memory is the server process's
RSS (psutil, on its pid); latencies are printed (`-s`), never asserted.
"""
from __future__ import annotations

import logging
import re
import socket
import subprocess
import sys
import time
import urllib.parse

import psutil
import pytest

httpx = pytest.importorskip("httpx", reason="pip install -e '.[test]' (httpx)")
pytest.importorskip("fastapi", reason="pip install -e '.[serve]'")
pytest.importorskip("a2wsgi", reason="pip install -e '.[monitor]'")

import taskflow  # noqa: E402
from taskflow import netguard  # noqa: E402
from taskflow.netguard.summary import Summary  # noqa: E402
from taskflow.providers import dialback  # noqa: E402
from support import serve  # noqa: E402
from support.flood import Flood  # noqa: E402

service = serve.service

MB = 2**20
GROWTH = 50 * MB          # what strangers may add to a server's RSS


class Server:
    """A server process under test: where to GET and POST, its token and pid."""

    def __init__(self, name: str, base: str, get: str, post: str, token: str, pid: int):
        self.name, self.base, self.get, self.post = name, base, get, post
        self.token, self.pid = token, pid
        self.port = urllib.parse.urlparse(base).port
        self.auth = {"Authorization": f"Bearer {self.token}"}

    def rss(self) -> int:
        return psutil.Process(self.pid).memory_info().rss


@pytest.fixture
def monitor_process(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with taskflow.Runtime(workers=1, run_dir=str(tmp_path / "runs"), echo_logs=False):
        pass
    token = "t0ken-" + "x" * 20
    proc = subprocess.Popen([sys.executable, "-m", "taskflow", "monitor", "--run-dir",
                             str(tmp_path / "runs"), "--port", "0", "--token", token],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert found, f"the monitor printed {line!r}"
        base = f"http://127.0.0.1:{found.group(1)}"
        for _ in range(600):       # answering
            try:
                if httpx.get(base + "/api/runs", params={"token": token}).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.05)
        yield Server("monitor", base, "/api/runs", "/api/runs", token, proc.pid)
    finally:
        proc.kill()
        proc.wait(10)


@pytest.fixture(params=["monitor", "service"])
def server(request, tmp_path):
    if request.param == "monitor":
        yield request.getfixturevalue("monitor_process")
        return
    svc = request.getfixturevalue("service")()
    yield Server("service", svc.url, "/runs", "/runs", svc.token, svc.proc.pid)


def _quiet(server: Server) -> int:
    """The server's RSS once it answered a few requests (its pages and imports loaded)."""
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=30) as c:
        for _ in range(3):
            assert c.get(server.get).status_code == 200
    return server.rss()


# -- a body of 512 MB ---------------------------------------------------------------------
class Body:
    """A body streamed from a generator (never allocated): counts what it gave."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.sent = 0

    def __iter__(self):
        piece = b"x" * (256 * 1024)
        while self.sent < self.size:
            self.sent += len(piece)
            yield piece


def test_a_big_body_is_answered_from_its_head_and_never_read(server):
    base = _quiet(server)
    peak = 0
    cases = [({}, 401), ({"Authorization": "Bearer wrong"}, 403), (server.auth, 413)]
    for headers, status in cases:
        for length in (True, False):                # with a Content-Length, and chunked
            body = Body(512 * MB)
            extra = {"Content-Length": str(body.size)} if length else {}
            r = httpx.post(server.base + server.post, content=iter(body), timeout=60,
                           headers={**headers, **extra, "Content-Type": "application/json"})
            assert r.status_code == status, (headers, length, r.text)
            assert "error" in r.json()
            assert body.sent < body.size, "the client sent the whole body before the answer"
            peak = max(peak, server.rss())
    print(f"{server.name}: RSS {base / MB:.0f} MB, after six 512 MB bodies -> "
          f"{peak / MB:.0f} MB")
    assert peak - base < GROWTH, f"{server.name}: {base / MB:.0f} -> {peak / MB:.0f} MB"
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=30) as c:
        assert c.get(server.get).status_code == 200


# -- 100 connections that pipeline and never read ------------------------------------------
def _pipeline(server: Server, headers: bytes, conns: int = 100, cap: int = MB) -> int:
    """``conns`` connections each send up to ``cap`` bytes of pipelined GETs and read
    nothing; they push until the server takes no more (or closed them). The server's
    peak RSS meanwhile."""
    path = urllib.parse.urlparse(server.base).path + server.get
    req = f"GET {path} HTTP/1.1\r\nHost: x\r\n".encode() + headers + b"\r\n"
    chunk = req * (65536 // len(req))
    socks = []
    for _ in range(conns):
        s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        s.setblocking(False)
        socks.append([s, 0, False])         # socket, bytes sent, done
    peak = 0
    try:
        idle_rounds = 0
        while idle_rounds < 3:              # three rounds in a row where no one could send
            moved = False
            for entry in socks:
                s, sent, done = entry
                if done:
                    continue
                try:
                    n = s.send(chunk)
                    entry[1] += n
                    moved = True
                    if entry[1] >= cap:
                        entry[2] = True
                except BlockingIOError:
                    pass
                except OSError:             # closed by the server
                    entry[2] = True
            peak = max(peak, server.rss())
            idle_rounds = 0 if moved else idle_rounds + 1
            if not moved:
                time.sleep(0.3)             # (the server reads what it will meanwhile)
        print(f"{server.name}: pipelined {sum(e[1] for e in socks) / MB:.0f} MB into "
              f"{conns} connections")
        return max(peak, server.rss())
    finally:
        for s, _, _ in socks:
            s.close()


def test_pipelining_connections_are_held_to_one_request_at_a_time(server):
    base = _quiet(server)
    stranger = _pipeline(server, b"")
    holder = _pipeline(server, f"Authorization: Bearer {server.token}\r\n".encode())
    print(f"{server.name}: RSS {base / MB:.0f} MB, strangers pipelining -> "
          f"{stranger / MB:.0f} MB, the token holder pipelining -> {holder / MB:.0f} MB")
    assert stranger - base < GROWTH
    assert holder - base < GROWTH
    with httpx.Client(base_url=server.base, headers=server.auth, timeout=30) as c:
        assert c.get(server.get).status_code == 200


# -- a connect flood from one address -------------------------------------------------------
def test_a_connect_flood_from_one_address_leaves_the_token_holder_served(server):
    """4 threads connect and close from 127.0.0.1. The holder's requests are all served:
    from 127.0.0.2 on its keep-alive connection and with a new connection each, and from
    127.0.0.1 itself with a new connection each (its connection, accepted in a burst
    of the flood's, is not the one closed to make room: theirs are closed already)."""
    ways = [("127.0.0.2", True), ("127.0.0.2", False), ("127.0.0.1", False)]
    clients = [httpx.Client(base_url=server.base, timeout=60,
                            headers={**server.auth, **({} if keep else {"Connection": "close"})},
                            transport=httpx.HTTPTransport(local_address=source))
               for source, keep in ways]
    try:
        quiet = [_timed(c, server.get, 20) for c in clients]
        with Flood(server.port) as flood:
            loud = [_timed(c, server.get, 20) for c in clients]
            for source in ("127.0.0.2", "127.0.0.1"):
                for _ in range(10):
                    assert _slow_get(server, source).startswith(b"HTTP/1.1 200 "), source
            made = flood.stop()
    finally:
        for c in clients:
            c.close()
    for (source, keep), q, f in zip(ways, quiet, loud):
        print(f"{server.name}: the token holder's request from {source} "
              f"({'keep-alive' if keep else 'a new connection each'}): median {q * 1000:.1f} "
              f"ms quiet, {f * 1000:.1f} ms under a 4-thread connect flood ({made} "
              f"connections)")


def _slow_get(server: Server, source: str) -> bytes:
    """A GET with the token whose head comes 50 ms after its connection (a client over a
    slow network): meanwhile the flood's connections are accepted after it, and it is
    the oldest of its address that sent nothing."""
    path = urllib.parse.urlparse(server.base).path + server.get
    with socket.create_connection(("127.0.0.1", server.port), timeout=60,
                                  source_address=(source, 0)) as s:
        time.sleep(0.05)
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {server.token}"
                  f"\r\nConnection: close\r\n\r\n".encode())
        out = b""
        while True:
            try:
                got = s.recv(65536)
            except ConnectionResetError:
                break
            if not got:
                break
            out += got
    return out


def _timed(c, path: str, n: int) -> float:
    """The median time of ``n`` requests, each asserted served."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = c.get(path)
        times.append(time.perf_counter() - t0)
        assert r.status_code == 200, r.text
    return sorted(times)[n // 2]


# -- the guard's books (no network) --------------------------------------------------------
class _Conn:
    def __init__(self, peer: str) -> None:
        self.peer = peer
        self.dropped = False

    def drop(self) -> None:
        self.dropped = True

    def rank(self) -> int:
        return 1                # silent


def test_a_flood_from_one_address_closes_that_address_own_connections_first():
    guard = netguard.Guard(per_client=4, max_waiting=6, per_client_open=8, max_open=10)
    holder = [_Conn("10.0.0.2") for _ in range(2)]
    for c in holder:
        guard.opened(c, c.peer)
    guard.wait(holder[0], holder[0].peer)   # one idles between requests: the oldest waiting
    guard.busy(holder[1], holder[1].peer)   # one has a request in the application
    flood = []
    for _ in range(40):                     # waiting ones, then busy ones
        c = _Conn("10.0.0.1")
        flood.append(c)
        guard.opened(c, c.peer)
        if len(flood) % 2:
            guard.wait(c, c.peer)
        else:
            guard.busy(c, c.peer)
    assert not any(c.dropped for c in holder)
    assert len(guard.open_by["10.0.0.1"]) == 8 and len(guard.open) == 10
    assert not flood[-1].dropped and sum(not c.dropped for c in flood) == 8
    assert guard.evicted == 32
    for c in flood:                 # its connections close: the books are empty of them
        guard.closed(c, c.peer)
    assert set(guard.open) == set(holder) and "10.0.0.1" not in guard.by_client


# -- the dial-back port's log -----------------------------------------------------------------
def test_refused_strangers_make_one_line_per_address_per_minute(caplog):
    now = [1000.0]
    lines = logging.getLogger("test.summary")
    said = Summary(lines, every=60.0, clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="test.summary"):
        assert said.add("10.0.0.1", "refused 1")
        assert not any(said.add("10.0.0.1", f"refused {i}") for i in range(2, 101))
        assert said.add("10.0.0.9", "refused other")       # another address: its own line
        now[0] += 61
        assert said.add("10.0.0.1", "refused 101")
        said.flush()
    got = [r.getMessage() for r in caplog.records if r.name == "test.summary"]
    assert got == ["refused 1", "refused other",
                   "refused 101 (99 more from 10.0.0.1 since its last line, not said one by "
                   "one)"]


def test_a_stranger_flood_at_the_dialback_port_is_one_line(caplog):
    srv = dialback.DialbackServer(lambda meta: {"name": "x", "slots": 1}, lambda h: None)
    n = 200
    try:
        with caplog.at_level(logging.INFO, logger="taskflow.providers.dialback"):
            for _ in range(n):
                s = socket.create_connection((srv.host, srv.port), timeout=10)
                s.sendall(b"GET / HTTP/1.1\r\n\r\n")        # not TLS: refused at once
                s.close()
            deadline = time.monotonic() + 120
            while len(srv.refused) < n and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(srv.refused) == n
            lines = [r for r in caplog.records if r.name == "taskflow.providers.dialback"]
            assert len(lines) == 1 and "refused" in lines[0].getMessage()
            srv.close()
            lines = [r.getMessage() for r in caplog.records
                     if r.name == "taskflow.providers.dialback"]
            assert len(lines) == 2 and f"{n - 2} more from 127.0.0.1 before it" in lines[1]
    finally:
        srv.close()
