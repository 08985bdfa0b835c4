"""The SSH testbed as the benchmarks use it: its lock and the hosts it brought up.

The lock is the one the tests take (testbed/testbed_hold.py: the
same file and abstract Unix socket name), so a benchmark and a test session never bring the
namespace hosts up or down under each other, even when one of them has a
private /tmp.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "testbed"))
from testbed_hold import Held, hold  # noqa: E402

TB = os.environ.get("TF_TB", "/tmp/taskflow-tb")
LOCK = os.path.join(os.path.dirname(TB), "taskflow-tb.lock")
Lock = Held


class Busy(RuntimeError):
    """The testbed stayed in use by another session."""


def lock(wait: float = 900.0) -> Held:
    """Take the SSH testbed's lock, waiting up to ``wait`` seconds (else :class:`Busy`)."""
    os.makedirs(TB, exist_ok=True)
    held = hold(LOCK, wait)
    if held is None:
        raise Busy(f"the SSH testbed stayed in use ({LOCK})")
    return held


def hosts_env(tb: str = TB) -> dict[str, str]:
    """What testbed/ssh_hosts.sh up wrote: TF_TB_HOSTS, TF_TB_KEY, ..."""
    env = {}
    with open(os.path.join(tb, "hosts.env")) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            env[k] = v.strip('"')
    return env
