"""A real `taskflow serve` for the tests that talk to it over HTTP (test_serve.py,
test_harden_net.py): the ``service`` fixture, which starts services and SIGKILLs them at
the test's end, and the workflow scripts both submit.

Import it after ``pytest.importorskip("httpx")`` and ``("fastapi")``: it needs httpx."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import httpx
import pytest

SQUARES = '''
import sys
from taskflow import task, wait_on

@task(returns=int)
def square(x):
    print("square of", x)
    return x * x

print("total", sum(wait_on([square(i) for i in range(int(sys.argv[1]))])))
'''

# Blocks in a task until the file named by argv[1] exists: the test decides when it ends.
GATED = '''
import os, sys, time
from taskflow import task, wait_on

@task(returns=int)
def gate(path, tag):
    print("waiting", tag, flush=True)
    while not os.path.exists(path):
        time.sleep(0.05)
    print("released", tag)
    return 1

print(wait_on(gate(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else "")))
'''


class Service:
    def __init__(self, workdir, *args):
        self.workdir = str(workdir)
        self.args = args
        self.proc = None

    def start(self):
        info = os.path.join(self.workdir, "service.json")
        if os.path.exists(info):
            os.unlink(info)
        self.proc = subprocess.Popen([sys.executable, "-m", "taskflow", "serve", "--port", "0",
                                      "--workdir", self.workdir, *self.args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(600):
            if os.path.exists(info):
                try:
                    data = json.load(open(info))
                    break
                except ValueError:
                    pass
            if self.proc.poll() is not None:
                raise AssertionError(f"taskflow serve exited: {self.proc.stderr.read()}")
            time.sleep(0.05)
        else:
            raise AssertionError("taskflow serve did not start")
        self.url = data["url"]
        self.token = open(os.path.join(self.workdir, "service.token")).read().strip()
        self.client = httpx.Client(base_url=self.url, timeout=60,
                                   headers={"Authorization": f"Bearer {self.token}"})
        return self

    def stop(self, sig=signal.SIGTERM):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)
            self.proc.wait(30)
        self.client.close()

    def submit(self, script, *args, **options):
        r = self.client.post("/runs", json={"script": {"name": "wf.py", "content": script},
                                            "args": [str(a) for a in args], **options})
        assert r.status_code == 201, r.text
        return r.json()

    def run(self, rid):
        return self.client.get(f"/runs/{rid}").json()

    def events(self, rid, until=None):
        """Every (event, data) of the run's stream, up to its end (or ``until`` is true)."""
        out = []
        with self.client.stream("GET", f"/runs/{rid}/events") as s:
            assert s.status_code == 200
            assert s.headers["content-type"].startswith("text/event-stream")
            name = None
            for line in s.iter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: "):
                    out.append((name, json.loads(line[6:])))
                    if name == "end" or (until and until(out[-1])):
                        break
        return out

    def wait_state(self, rid, *states):
        for _ in range(1200):
            r = self.run(rid)
            if r["state"] in states:
                return r
            time.sleep(0.05)
        raise AssertionError(f"run {rid} stayed {r['state']}, not {states}")


@pytest.fixture
def service(tmp_path):
    started = []

    def make(*args, workdir=None):
        s = Service(workdir or tmp_path / "svc", *args).start()
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop(signal.SIGKILL)
