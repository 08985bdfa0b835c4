"""A connect/close flood from one address, in a process of its own (the test's threads
would share the test's GIL with the client it measures, and flood less)."""
from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import socket, sys, threading
port, warm, made = int(sys.argv[1]), int(sys.argv[2]), [0]
def flood():
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=5).close()
            made[0] += 1
            if made[0] == warm:
                print("on", flush=True)
        except OSError:
            pass
for _ in range(4):
    threading.Thread(target=flood, daemon=True).start()
sys.stdin.read()
print(made[0], flush=True)
"""


class Flood:
    """4 threads that connect to ``port`` and close, until :meth:`stop` (which returns how
    many connections they made); started once they made ``warm`` (the server is behind
    by then: it accepts them in bursts)."""

    def __init__(self, port: int, warm: int = 5000) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", SCRIPT, str(port), str(warm)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "on", "the flood did not start"

    def stop(self) -> int:
        out, _ = self.proc.communicate("", timeout=60)
        return int(out.strip() or 0)

    def __enter__(self) -> "Flood":
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
