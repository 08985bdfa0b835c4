"""Dial-back connections: both sides prove the run's secret over TLS before any pickle."""
from __future__ import annotations

import os
import pickle
import secrets
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

from taskflow.agent.dialback import connect
from taskflow.providers import dialback
from taskflow.providers.tls import server_context
from taskflow.wire import dialback as W
from taskflow.wire import messages as M
from taskflow.wire import protocol as P


class _Marker:
    """A pickle that, once loaded, creates a file: what a fake master would send."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


def _fake_master(marker: str) -> tuple[str, threading.Thread, list]:
    """A TLS listener that speaks the handshake without the secret, then sends a pickle."""
    ctx, _ = server_context()
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    seen: list = []

    def serve() -> None:
        raw, _ = srv.accept()
        try:
            conn = ctx.wrap_socket(raw, server_side=True)
            conn.sendall(W.MAGIC + secrets.token_bytes(W.NONCE))
            seen.append(W.recv_exact(conn, W.NONCE + W.PROOF + 4))
            conn.sendall(b"OK" + secrets.token_bytes(W.PROOF))     # a made-up proof
            conn.sendall(P.encode(M.HELLO, _Marker(marker)))
            time.sleep(1)
        except OSError:
            pass
        finally:
            srv.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return f"127.0.0.1:{srv.getsockname()[1]}", t, seen


def test_an_agent_refuses_a_master_that_cannot_prove_the_secret(tmp_path):
    marker = str(tmp_path / "pwned")
    address, t, seen = _fake_master(marker)
    secret_file = dialback.write_secret(str(tmp_path / "secret"), secrets.token_hex(32))
    env = dict(os.environ, **{dialback.SECRET_FILE_ENV: secret_file},
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    r = subprocess.run([sys.executable, "-m", "taskflow.node", "--connect", address],
                       env=env, capture_output=True, text=True, timeout=60)
    t.join(5)
    assert seen, "the agent never got as far as the proofs"
    assert r.returncode == 3 and "did not prove it holds the run's secret" in r.stderr
    assert not os.path.exists(marker)        # nothing the fake master sent was unpickled


def test_a_master_refuses_an_agent_without_the_secret_and_proves_itself_to_one_with_it():
    joined: list = []
    srv = dialback.DialbackServer(lambda meta: {"name": "x", "slots": 1}, joined.append,
                                  ready_timeout=2.0)
    try:
        with pytest.raises(ConnectionError):
            connect(srv.address, "not-the-secret", {"job_id": "1"}, timeout=5)
        sock = connect(srv.address, srv.secret, {"job_id": "2"}, timeout=5)
        assert sock.version() == "TLSv1.3"
        op, hello = P.read_frame_blocking(_Recv(sock))   # the master's first frame, in TLS
        assert op == M.HELLO and hello["name"] == "x"
        sock.close()
        assert any("wrong secret" in m for m in srv.refused)
    finally:
        srv.close()


class _Recv:
    def __init__(self, sock):
        self.recv = sock.recv


def test_a_relay_in_the_middle_cannot_use_an_agents_proof():
    """A listener that forwards the agent's proof to the real master fails: the proof is
    bound to the certificate the agent saw (the relay's), not the master's."""
    srv = dialback.DialbackServer(lambda meta: {"name": "x", "slots": 1}, lambda h: None,
                                  ready_timeout=2.0)
    ctx, _ = server_context()
    relay = socket.socket()
    relay.bind(("127.0.0.1", 0))
    relay.listen(1)
    result: list = []

    def run_relay() -> None:
        raw, _ = relay.accept()
        agent_side = ctx.wrap_socket(raw, server_side=True)
        master_side = W.client_context().wrap_socket(
            socket.create_connection((srv.host, srv.port), timeout=5))
        head = W.recv_exact(master_side, len(W.MAGIC) + W.NONCE)
        agent_side.sendall(head)                     # the real master's challenge
        answer = W.recv_exact(agent_side, W.NONCE + W.PROOF + 4)
        (size,) = struct.unpack(">I", answer[-4:])
        master_side.sendall(answer + W.recv_exact(agent_side, size))
        try:
            result.append(master_side.recv(2))
        except OSError as exc:
            result.append(exc)

    t = threading.Thread(target=run_relay, daemon=True)
    t.start()
    try:
        with pytest.raises((ConnectionError, EOFError, OSError)):
            connect(f"127.0.0.1:{relay.getsockname()[1]}", srv.secret, {"job_id": "3"},
                    timeout=5)
        t.join(10)
        assert result and result[0] in (b"", ) or isinstance(result[0], OSError)
        assert any("wrong secret" in m for m in srv.refused)
    finally:
        relay.close()
        srv.close()


def test_connections_in_their_handshake_are_bounded():
    """Silent connections: at most PER_ADDRESS of one address wait (a newer one closes the
    oldest), and one thread each."""
    srv = dialback.DialbackServer(lambda meta: {"name": "x", "slots": 1}, lambda h: None)
    before = threading.active_count()
    conns = []
    try:
        n = dialback.MAX_HANDSHAKES + 10
        for _ in range(n):      # silent: never say a word
            conns.append(socket.create_connection((srv.host, srv.port), timeout=5))
        deadline = time.time() + 5
        while time.time() < deadline and sum("closed to make room" in m
                                              for m in srv.refused) < n - dialback.PER_ADDRESS:
            time.sleep(0.05)
        made_room = [m for m in srv.refused if "closed to make room" in m]
        assert len(made_room) == n - dialback.PER_ADDRESS, srv.refused
        assert "more than 4 handshakes from 127.0.0.1" in made_room[0]
        assert threading.active_count() <= before + dialback.PER_ADDRESS + 2
    finally:
        for c in conns:
            c.close()
        srv.close()


def test_the_pickle_a_fake_master_would_send_does_run_when_loaded(tmp_path):
    """(The marker of the first test works: loading it does create the file.)"""
    marker = str(tmp_path / "m")
    pickle.loads(pickle.dumps(_Marker(marker))).close()
    assert os.path.exists(marker)
