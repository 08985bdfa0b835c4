"""The token holder's latency while a stranger floods the port (issue 43).

    python benchmarks/strangers_bench.py [--server service|monitor|both] [--requests 40]

Starts ``taskflow serve`` or ``taskflow monitor`` (a subprocess of this checkout's
``src``), then times the token holder's GETs, quiet and under a connect/close flood
of 4 threads from 127.0.0.1 (another process), three ways: from 127.0.0.2 on one keep-alive
connection, from 127.0.0.2 with a new connection per request, and from 127.0.0.1
(the flood's own address) with a new connection per request. Prints, per way, the
requests served of those made and the median and 90th percentile latency, quiet and
flooded, and the flooded / quiet ratio of the medians (the target: at most 2x).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "src"))

import httpx  # noqa: E402


def start(kind: str, tmp: str) -> tuple[subprocess.Popen[str], str, str, str]:
    """The server process, its base URL, the path to GET and its token."""
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "src"))
    if kind == "service":
        proc = subprocess.Popen([sys.executable, "-m", "taskflow", "serve", "--port", "0",
                                 "--workdir", os.path.join(tmp, "svc")], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        url = re.search(r"(http://\S+)", proc.stderr.readline())
        token = re.search(r"token (\S+)", proc.stderr.readline())
        assert url and token
        return proc, url.group(1), "/runs", token.group(1)
    subprocess.run([sys.executable, "-c", "import taskflow\nwith taskflow.Runtime(workers=1, "
                    f"run_dir={os.path.join(tmp, 'runs')!r}, echo_logs=False): pass"],
                   env=env, check=True, cwd=tmp)
    token = "bench-token-0123456789"
    proc = subprocess.Popen([sys.executable, "-m", "taskflow", "monitor", "--run-dir",
                             os.path.join(tmp, "runs"), "--port", "0", "--token", token],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, cwd=tmp)
    assert proc.stderr is not None
    found = re.search(r"(http://127\.0\.0\.1:\d+)/", proc.stderr.readline())
    assert found
    return proc, found.group(1), "/api/runs", token


def timed(base: str, path: str, token: str, n: int, source: str, keep: bool
          ) -> tuple[int, list[float]]:
    """Requests served of ``n``, and the time of each served one."""
    ok, times = 0, []
    headers = {"Authorization": f"Bearer {token}"}
    if not keep:
        headers["Connection"] = "close"         # a new connection per request
    with httpx.Client(base_url=base, headers=headers, timeout=10,
                      transport=httpx.HTTPTransport(local_address=source)) as client:
        for _ in range(n):
            t0 = time.perf_counter()
            try:
                r = client.get(path)
                if r.status_code == 200:
                    ok += 1
                    times.append(time.perf_counter() - t0)
            except httpx.HTTPError:
                pass
    return ok, times


FLOOD = """
import socket, sys, threading
port, made = int(sys.argv[1]), [0]
def flood():
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            made[0] += 1
            if made[0] == 300:
                print("on", flush=True)
        except OSError:
            pass
for _ in range(4):
    threading.Thread(target=flood, daemon=True).start()
sys.stdin.read()
print(made[0], flush=True)
"""


def flood(port: int) -> subprocess.Popen[str]:
    """4 threads that connect and close, in a process of their own (not this one's GIL);
    returns once they made 300 connections. Its stdin's end stops it."""
    proc = subprocess.Popen([sys.executable, "-c", FLOOD, str(port)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "on"
    return proc


def stats(times: list[float]) -> str:
    if not times:
        return "-"
    s = sorted(times)
    return f"{s[len(s) // 2] * 1000:.1f}/{s[int(len(s) * 0.9)] * 1000:.1f} ms"


def bench(kind: str, n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        proc, base, path, token = start(kind, tmp)
        try:
            port = int(base.split(":")[2].split("/")[0])
            for _ in range(200):
                try:
                    httpx.get(base + path, headers={"Authorization": f"Bearer {token}"})
                    break
                except httpx.TransportError:
                    time.sleep(0.05)
            ways = [("127.0.0.2 keep-alive", "127.0.0.2", True),
                    ("127.0.0.2 new conn", "127.0.0.2", False),
                    ("127.0.0.1 new conn", "127.0.0.1", False)]
            for name, source, keep in ways:
                q_ok, quiet = timed(base, path, token, n, source, keep)
                flooding = flood(port)
                f_ok, loud = timed(base, path, token, n, source, keep)
                made, _ = flooding.communicate("", timeout=30)
                ratio = (sorted(loud)[len(loud) // 2] / sorted(quiet)[len(quiet) // 2]
                         if loud and quiet else float("nan"))
                print(f"{kind:8} {name:22} quiet {q_ok}/{n} {stats(quiet):>17}   flood "
                      f"{f_ok}/{n} {stats(loud):>17}   x{ratio:.1f}  ({made.strip()} flood "
                      f"connections)", flush=True)
        finally:
            proc.kill()
            proc.wait()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", choices=["service", "monitor", "both"], default="both")
    ap.add_argument("--requests", type=int, default=40)
    a = ap.parse_args()
    for kind in (["service", "monitor"] if a.server == "both" else [a.server]):
        bench(kind, a.requests)


if __name__ == "__main__":
    main()
